import { OffsetGap, PendingBatch, tilingProblems, trimToNext, type LogPiece } from './log-tiling';

const bytes = (from: number, n: number) => Uint8Array.from({ length: n }, (_, i) => (from + i) % 251);
const chunk = (offset: number, n: number, stream: 1 | 2 = 1): LogPiece => ({ offset, stream, data: bytes(offset, n) });
const rowsOf = (rows: LogPiece[]) => rows.map((r) => ({ offset: r.offset, length: r.data.length }));

describe('trimToNext', () => {
  it('keeps a chunk that starts at the next offset', () => expect(trimToNext(chunk(10, 5), 10)).toEqual(chunk(10, 5)));
  it('drops a chunk that lies entirely below the next offset (a replay)', () => {
    expect(trimToNext(chunk(0, 10), 10)).toBeNull();
    expect(trimToNext(chunk(3, 2), 10)).toBeNull();
  });
  it('keeps only the new tail of a straddling chunk', () => {
    const t = trimToNext(chunk(4, 10), 10)!;
    expect(t.offset).toBe(10);
    expect(Array.from(t.data)).toEqual(Array.from(bytes(10, 4)));
  });
  it('refuses a chunk beyond the next offset', () => expect(() => trimToNext(chunk(11, 1), 10)).toThrow(OffsetGap));
  it('drops an empty chunk', () => expect(trimToNext(chunk(10, 0), 10)).toBeNull());
});

describe('PendingBatch', () => {
  it('merges contiguous bytes of one stream into rows of at most maxRowBytes', () => {
    const b = new PendingBatch(100, 8);
    b.add(chunk(100, 5));
    b.add(chunk(105, 5));
    b.add(chunk(110, 3, 2));
    b.add(chunk(113, 20, 2));
    expect(b.end).toBe(133);
    const rows = b.take();
    expect(rows.map((r) => [r.offset, r.data.length, r.stream])).toEqual([
      [100, 8, 1],
      [108, 2, 1],
      [110, 8, 2],
      [118, 8, 2],
      [126, 7, 2],
    ]);
    for (const r of rows) expect(Array.from(r.data)).toEqual(Array.from(bytes(r.offset, r.data.length)));
    expect(b.start).toBe(133);
    expect(b.bytes).toBe(0);
  });

  it('stores each byte once when the runner re-sends from an earlier offset', () => {
    const b = new PendingBatch(0, 16);
    expect(b.add(chunk(0, 10))).toBe(10);
    expect(b.add(chunk(5, 10))).toBe(5); // overlaps 5..10
    expect(b.add(chunk(0, 15))).toBe(0); // fully replayed
    const first = b.take();
    expect(b.add(chunk(12, 6))).toBe(3);
    const second = b.take();
    const all = [...first, ...second];
    expect(tilingProblems(rowsOf(all), 18)).toEqual([]);
    const joined = Buffer.concat(all.map((r) => Buffer.from(r.data)));
    expect(joined.equals(Buffer.from(bytes(0, 18)))).toBe(true);
  });

  it('refuses a gap and keeps what it had', () => {
    const b = new PendingBatch(0);
    b.add(chunk(0, 4));
    expect(() => b.add(chunk(5, 1))).toThrow(OffsetGap);
    expect(b.end).toBe(4);
  });
});

describe('tilingProblems', () => {
  it('accepts rows that tile [0, end) in any order', () => expect(tilingProblems([{ offset: 5, length: 5 }, { offset: 0, length: 5 }], 10)).toEqual([]));
  it('reports gaps, overlaps, empty rows and a wrong end', () => {
    expect(tilingProblems([{ offset: 0, length: 4 }, { offset: 5, length: 5 }], 10)).toEqual(['gap [4, 5)']);
    expect(tilingProblems([{ offset: 0, length: 6 }, { offset: 5, length: 5 }], 10)).toEqual(['overlap at 5 (covered up to 6)']);
    expect(tilingProblems([{ offset: 0, length: 0 }])).toEqual(['empty row at 0']);
    expect(tilingProblems([{ offset: 0, length: 3 }], 4)).toEqual(['rows end at 3, expected 4']);
  });
});
