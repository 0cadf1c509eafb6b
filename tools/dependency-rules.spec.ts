import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Nx tags decide who may depend on whom (STYLE.md rule 11). The graph comes from Nx's own analysis
 * of the source imports, so a forbidden import anywhere fails this test.
 */
const allowed: Record<string, string[]> = {
  'type:kernel': [],
  'type:domain': ['type:kernel'],
  'type:contracts': ['type:kernel', 'type:domain'],
  'type:generated': [],
  'type:platform': ['type:kernel', 'type:domain', 'type:contracts', 'type:generated', 'type:testing'],
  'type:testing': ['type:kernel', 'type:contracts', 'type:platform'],
  'type:app': ['type:kernel', 'type:contracts', 'type:testing'],
  'type:service': ['type:kernel', 'type:domain', 'type:contracts', 'type:generated', 'type:platform', 'type:testing'],
};

describe('project dependency rules', () => {
  it('every project edge is allowed by the tags', () => {
    const root = join(__dirname, '..');
    const dir = mkdtempSync(join(tmpdir(), 'hp-graph-'));
    try {
      const file = join(dir, 'graph.json');
      const r = spawnSync(process.execPath, [require.resolve('nx/bin/nx'), 'graph', `--file=${file}`], { cwd: root, env: { ...process.env, NX_DAEMON: 'false', NX_NO_CLOUD: 'true' }, encoding: 'utf8' });
      expect(r.status).toBe(0);
      const graph = JSON.parse(readFileSync(file, 'utf8')).graph as {
        nodes: Record<string, { data: { tags?: string[] } }>;
        dependencies: Record<string, { target: string }[]>;
      };
      const tagOf = (p: string) => graph.nodes[p]!.data.tags!.find((t) => t.startsWith('type:'))!;
      const violations: string[] = [];
      let edges = 0;
      for (const [source, deps] of Object.entries(graph.dependencies)) {
        for (const d of deps) {
          if (d.target.startsWith('npm:') || d.target === source) continue;
          edges++;
          if (!allowed[tagOf(source)]!.includes(tagOf(d.target))) violations.push(`${source} (${tagOf(source)}) → ${d.target} (${tagOf(d.target)})`);
        }
      }
      expect(violations).toEqual([]);
      expect(edges).toBeGreaterThan(10); // the analysis really saw the imports
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
