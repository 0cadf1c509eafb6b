import { displayText, utf8SafeLength, utf8SafeStart } from './command-log';

describe('UTF-8 edges of capped reads', () => {
  const euro = Buffer.from('€'); // e2 82 ac

  it('drops a character cut at the end', () => {
    expect(utf8SafeLength(Buffer.concat([Buffer.from('ab'), euro.subarray(0, 2)]))).toBe(2);
    expect(utf8SafeLength(Buffer.concat([Buffer.from('ab'), euro.subarray(0, 1)]))).toBe(2);
    expect(utf8SafeLength(Buffer.concat([Buffer.from('ab'), euro]))).toBe(5);
    expect(utf8SafeLength(Buffer.concat([Buffer.from('a'), Buffer.from('😀').subarray(0, 3)]))).toBe(1);
  });

  it('keeps bytes that are not UTF-8 at all', () => {
    expect(utf8SafeLength(Buffer.from([0x61, 0xff]))).toBe(2);
    expect(utf8SafeLength(Buffer.from([0x80, 0x80, 0x80, 0x80]))).toBe(4);
  });

  it('skips continuation bytes that open a tail read', () => {
    expect(utf8SafeStart(Buffer.concat([euro.subarray(1), Buffer.from('x')]))).toBe(2);
    expect(utf8SafeStart(Buffer.from('x'))).toBe(0);
  });

  it('replaces invalid sequences for display only', () => {
    expect(displayText(Buffer.from([0x6f, 0x6b, 0xff, 0x0a]))).toBe('ok\uFFFD\n');
  });
});
