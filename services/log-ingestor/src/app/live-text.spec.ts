import { incompleteTail, LiveText, splitForDisplay } from './live-text';

const utf8 = (s: string) => new TextEncoder().encode(s);
const size = (s: string) => utf8(s).length;

describe('incompleteTail', () => {
  it('finds a cut multi-byte character at the end', () => {
    const euro = utf8('€'); // 3 bytes
    expect(incompleteTail(euro.subarray(0, 1))).toBe(1);
    expect(incompleteTail(euro.subarray(0, 2))).toBe(2);
    expect(incompleteTail(euro)).toBe(0);
    expect(incompleteTail(utf8('ab'))).toBe(0);
    expect(incompleteTail(Uint8Array.of(0x61, 0xf0, 0x9f, 0x98))).toBe(3);
  });
  it('does not hold back invalid bytes', () => expect(incompleteTail(Uint8Array.of(0x80, 0x80, 0x80, 0x80))).toBe(0));
});

describe('splitForDisplay', () => {
  it('keeps each slice within the text limit without splitting a character', () => {
    const text = 'é'.repeat(100); // 200 bytes
    const slices = splitForDisplay(1000, utf8(text), 33);
    expect(slices.every((s) => size(s.text) <= 33)).toBe(true);
    expect(slices.map((s) => s.text).join('')).toBe(text);
    expect(slices[0]!.offset).toBe(1000);
    expect(slices.reduce((n, s) => n + s.bytes, 0)).toBe(200);
    for (let i = 1; i < slices.length; i++) expect(slices[i]!.offset).toBe(slices[i - 1]!.offset + slices[i - 1]!.bytes);
  });
  it('replaces invalid bytes for display and still respects the limit', () => {
    const data = new Uint8Array(100).fill(0xff); // each byte becomes U+FFFD (3 bytes)
    const slices = splitForDisplay(0, data, 32);
    expect(slices.every((s) => size(s.text) <= 32)).toBe(true);
    expect(slices.map((s) => s.text).join('')).toBe('\ufffd'.repeat(100));
  });
  it('keeps NUL bytes as text', () => expect(splitForDisplay(0, Uint8Array.of(0x61, 0, 0x62))).toEqual([{ offset: 0, bytes: 3, text: 'a\u0000b' }]));
});

describe('LiveText', () => {
  it('carries a character cut by a batch boundary into the next batch', () => {
    const live = new LiveText();
    const all = utf8('ab€cd');
    const first = live.push(0, all.subarray(0, 3)); // 'ab' + first byte of €
    const second = live.push(3, all.subarray(3));
    expect(first).toEqual([{ offset: 0, bytes: 2, text: 'ab' }]);
    expect(second).toEqual([{ offset: 2, bytes: 5, text: '€cd' }]);
  });
  it('flushes a dangling partial character when the output ends', () => {
    const live = new LiveText();
    live.push(0, Uint8Array.of(0x61, 0xe2));
    expect(live.push(2, new Uint8Array(0), true)).toEqual([{ offset: 1, bytes: 1, text: '\ufffd' }]);
  });
});
