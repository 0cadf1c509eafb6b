import { createCipheriv, createHash } from 'node:crypto';

/**
 * Deterministic hostile output of any size, computed on demand at any offset (AES-128-CTR of zeros
 * keyed by a seed), so a runner double can serve a gigabyte without holding it. The bytes are
 * random: NULs, invalid UTF-8 and lone continuation bytes everywhere. `noNewline` maps every 0x0a to
 * 0x0b: the whole output is then one line. A runner double switches between stdout and stderr every
 * `regionBytes` (default 1 MiB).
 */
export class GeneratedOutput {
  private readonly key: Buffer;

  constructor(
    readonly seed: string,
    readonly total: number,
    readonly options: { noNewline?: boolean; regionBytes?: number } = {},
  ) {
    this.key = createHash('sha256').update(seed).digest().subarray(0, 16);
  }

  get regionBytes(): number {
    return this.options.regionBytes ?? 1024 * 1024;
  }

  /** The bytes `[offset, offset + length)` (clamped to the total). */
  bytes(offset: number, length: number): Buffer {
    const end = Math.min(this.total, offset + length);
    if (end <= offset) return Buffer.alloc(0);
    const block = Math.floor(offset / 16);
    const iv = Buffer.alloc(16);
    iv.writeBigUInt64BE(BigInt(block), 8);
    const cipher = createCipheriv('aes-128-ctr', this.key, iv);
    const skip = offset - block * 16;
    const out = cipher.update(Buffer.alloc(end - offset + skip)).subarray(skip);
    if (this.options.noNewline) for (let i = out.indexOf(0x0a); i !== -1; i = out.indexOf(0x0a, i + 1)) out[i] = 0x0b;
    return out;
  }

  /** SHA-256 of `[from, to)`, computed in 4 MiB steps (the runner's own digest of what it serves). */
  digest(from = 0, to = this.total): string {
    const h = createHash('sha256');
    for (let at = from; at < to; at += 4 * 1024 * 1024) h.update(this.bytes(at, Math.min(4 * 1024 * 1024, to - at)));
    return h.digest('hex');
  }
}

/** The seeded PRNG of @handplane/testing (mulberry32): the crash test's moments are reproducible from the printed seed. */
export { seededRandom } from '@handplane/testing';
