import { capPlan, droppableTo, phaseOf, splitAt, truncationOf } from './output-cap';

describe('output cap arithmetic', () => {
  it('keeps the first half and the last half (an odd byte goes to the tail); 0 means no cap', () => {
    expect(capPlan(256 * 1024 * 1024)).toEqual({ headBytes: 128 * 1024 * 1024, tailBytes: 128 * 1024 * 1024 });
    expect(capPlan(5)).toEqual({ headBytes: 2, tailBytes: 3 });
    expect(capPlan(0)).toBeNull();
  });

  it('chooses the phase from the cursor', () => {
    const plan = capPlan(100)!;
    expect(phaseOf({ committedOffset: 10, drop: null }, plan)).toEqual({ kind: 'store', limit: 50 });
    // The head was committed to the byte, nothing dropped yet: dropping starts there.
    expect(phaseOf({ committedOffset: 50, drop: null }, plan)).toEqual({ kind: 'drop', droppedFrom: 50 });
    expect(phaseOf({ committedOffset: 70, drop: { from: 50, to: 70, final: false } }, plan)).toEqual({ kind: 'drop', droppedFrom: 50 });
    // Once the range is fixed the tail is stored without a limit.
    expect(phaseOf({ committedOffset: 900, drop: { from: 50, to: 900, final: true } }, plan)).toEqual({ kind: 'store', limit: null });
    expect(phaseOf({ committedOffset: 5000, drop: null }, null)).toEqual({ kind: 'store', limit: null });
  });

  it('moves the cursor across dropped bytes only as far as the tail allows, never back', () => {
    expect(droppableTo(50, 120, 50)).toBe(70);
    expect(droppableTo(50, 90, 50)).toBe(50);
    expect(droppableTo(80, 100, 50)).toBe(80);
    // At the exit: where the tail starts (an output shorter than the cap drops nothing).
    expect(droppableTo(50, 1000, 50)).toBe(950);
    expect(droppableTo(50, 60, 50)).toBe(50);
  });

  it('names a dropped range only when bytes were dropped', () => {
    expect(truncationOf(null)).toBeUndefined();
    expect(truncationOf({ from: 50, to: 50, final: true })).toBeUndefined();
    expect(truncationOf({ from: 50, to: 950, final: true })).toEqual({ droppedFrom: 50, droppedTo: 950, droppedBytes: 900 });
  });

  it('splits a piece at an offset without copying', () => {
    const data = Buffer.from('abcdef');
    const piece = { offset: 10, stream: 2 as const, data };
    const [below, past] = splitAt(piece, 13);
    expect(Buffer.from(below!.data).toString()).toBe('abc');
    expect(past).toMatchObject({ offset: 13, stream: 2 });
    expect(Buffer.from(past!.data).toString()).toBe('def');
    expect(past!.data.buffer).toBe(data.buffer);
    expect(splitAt(piece, 10)).toEqual([null, piece]);
    expect(splitAt(piece, 16)).toEqual([piece, null]);
  });
});
