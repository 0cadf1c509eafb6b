import { join } from 'node:path';
import * as ts from 'typescript';
import { MODELS, key, type Manifest } from './manifests';
import { ROOT } from './helm';

/**
 * Fields the Kubernetes API does not know (a misspelt `nodeSelecter` is silently dropped by
 * `kubectl apply` with lax validation, refused with strict). The kubernetes-models JSON schemas
 * allow extra properties, so this check types every object with the models' TypeScript
 * interfaces and lets the compiler's excess-property check find them: one program for all
 * objects, in memory. Answers one message per object that has an unknown field.
 */
export function unknownFieldErrors(manifests: readonly Manifest[]): string[] {
  const file = join(ROOT, 'tools', 'deploy', '__rendered_manifests__.ts');
  const kinds = [...new Set(manifests.map((m) => m.kind))].filter((k) => MODELS[k]);
  const lines = kinds.map((k) => `import type { ${MODELS[k]!.iface} } from '${MODELS[k]!.module}';`);
  const names: string[] = [];
  manifests.forEach((m, i) => {
    if (!MODELS[m.kind]) return;
    names[i] = key(m);
    lines.push(`export const m${i}: ${MODELS[m.kind]!.iface} = ${JSON.stringify(m)};`);
  });
  const source = lines.join('\n');
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.Node16,
    moduleResolution: ts.ModuleResolutionKind.Node16,
    types: [],
  };
  const host = ts.createCompilerHost(options);
  const base = { getSourceFile: host.getSourceFile.bind(host), fileExists: host.fileExists.bind(host), readFile: host.readFile.bind(host) };
  host.getSourceFile = (f, lang, ...rest) => (f === file ? ts.createSourceFile(f, source, lang) : base.getSourceFile(f, lang, ...rest));
  host.fileExists = (f) => f === file || base.fileExists(f);
  host.readFile = (f) => (f === file ? source : base.readFile(f));
  const program = ts.createProgram([file], options, host);
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const text = ts.flattenDiagnosticMessageText(d.messageText, ' ');
    if (d.file?.fileName !== file || d.start === undefined) return text;
    const line = d.file.getLineAndCharacterOfPosition(d.start).line;
    const index = Number(/^export const m(\d+):/.exec(source.split('\n')[line] ?? '')?.[1]);
    return `${names[index] ?? `line ${line}`}: ${text}`;
  });
}
