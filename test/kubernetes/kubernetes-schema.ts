import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/**
 * Checks Kubernetes objects offline against the API schemas of the
 * kubernetes-models package (generated from Kubernetes' own OpenAPI
 * definitions), twice:
 *
 * - `validate()` of the kind's model: the JSON schema (required fields,
 *   types, enums, formats);
 * - the kind's TypeScript interface, which lists every field the API knows:
 *   each object is written as a typed object literal and type-checked, so a
 *   misspelt or unknown field is an error (the JSON schemas allow unknown
 *   fields, the API server drops or refuses them).
 */

const require = createRequire(import.meta.url);
const HERE = dirname(fileURLToPath(import.meta.url));

export interface KubernetesObject {
  apiVersion: string;
  kind: string;
  metadata?: { name?: string; namespace?: string; [key: string]: unknown };
  [key: string]: unknown;
}

/** `apps/v1` + `Deployment` -> `kubernetes-models/apps/v1/Deployment`; the core group is `v1`. */
export function modelModule(object: Pick<KubernetesObject, 'apiVersion' | 'kind'>): string {
  return `kubernetes-models/${object.apiVersion}/${object.kind}`;
}

/** What `validate()` of the kind's model says: undefined when valid, else its message. */
export async function schemaErrors(object: KubernetesObject): Promise<string | undefined> {
  let module: Record<string, unknown>;
  try {
    module = await import(modelModule(object));
  } catch {
    return `no Kubernetes API schema for ${object.apiVersion} ${object.kind}`;
  }
  const Model = module[object.kind] as new (data: unknown) => { validate(): void };
  try {
    new Model(object).validate();
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

/**
 * The TypeScript check of every object at once: its errors, each prefixed by
 * the label of the object it is in (`labels[i]` for `objects[i]`).
 */
export function typeErrors(objects: readonly KubernetesObject[], labels: readonly string[]): string[] {
  const file = join(HERE, '__kubernetes_objects__.ts');
  // One line per import, then one line per object: a diagnostic's line names its object.
  const imports = objects.map((object, i) => `import type { I${object.kind} as T${i} } from '${modelModule(object)}';`);
  const literals = objects.map((object, i) => `export const o${i}: T${i} = ${JSON.stringify(object)};`);
  const source = [...imports, ...literals].join('\n');
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: [],
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
  };
  const host = ts.createCompilerHost(options);
  const { getSourceFile, fileExists, readFile } = host;
  host.getSourceFile = (name, language, ...rest) =>
    name === file ? ts.createSourceFile(name, source, language) : getSourceFile.call(host, name, language, ...rest);
  host.fileExists = (name) => name === file || fileExists.call(host, name);
  host.readFile = (name) => (name === file ? source : readFile.call(host, name));
  const program = ts.createProgram([file], options, host);
  const sourceFile = program.getSourceFile(file) as ts.SourceFile;
  const diagnostics = [...program.getSyntacticDiagnostics(sourceFile), ...program.getSemanticDiagnostics(sourceFile)];
  return diagnostics.map((diagnostic) => {
    const line = diagnostic.start === undefined ? 0 : sourceFile.getLineAndCharacterOfPosition(diagnostic.start).line;
    const label = line < imports.length ? `${labels[line]} (its schema)` : labels[line - imports.length];
    return `${label}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')}`;
  });
}

/** The kubernetes-models version the checks use (for the docs and the test's title). */
export function kubernetesModelsVersion(): string {
  return (require('kubernetes-models/package.json') as { version: string }).version;
}
