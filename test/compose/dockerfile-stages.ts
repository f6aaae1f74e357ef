/** One instruction of a Dockerfile, continuation lines joined. */
export interface DockerfileInstruction {
  keyword: string;
  args: string;
}

/** One build stage: its base image, its name (`AS name`), and its instructions after FROM. */
export interface DockerfileStage {
  base: string;
  name: string | undefined;
  instructions: DockerfileInstruction[];
}

export interface ParsedDockerfile {
  /** ARG instructions before the first FROM, as name → default. */
  globalArgs: Record<string, string>;
  stages: DockerfileStage[];
}

/**
 * A small Dockerfile reader, enough to check a file's stages: comments and
 * parser directives dropped, `\` continuations joined, FROM lines split into
 * base image and stage name.
 */
export function parseDockerfile(text: string): ParsedDockerfile {
  const logical: string[] = [];
  let pending = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line.startsWith('#')) continue;
    if (line.endsWith('\\')) {
      pending += `${line.slice(0, -1).trim()} `;
      continue;
    }
    const joined = (pending + line).trim();
    pending = '';
    if (joined !== '') logical.push(joined);
  }
  const parsed: ParsedDockerfile = { globalArgs: {}, stages: [] };
  for (const line of logical) {
    const space = line.search(/\s/);
    const keyword = (space === -1 ? line : line.slice(0, space)).toUpperCase();
    const args = space === -1 ? '' : line.slice(space + 1).trim();
    if (keyword === 'FROM') {
      const words = args.split(/\s+/).filter((word) => !word.startsWith('--'));
      const asIndex = words.findIndex((word) => word.toUpperCase() === 'AS');
      parsed.stages.push({
        // A base named by a global ARG (`FROM ${IMAGE}`) resolves to that ARG's default, as the builder does.
        base: (words[0] ?? '').replace(/^\$\{?(\w+)\}?$/, (whole, name: string) => parsed.globalArgs[name] ?? whole),
        name: asIndex === -1 ? undefined : words[asIndex + 1],
        instructions: [],
      });
      continue;
    }
    const stage = parsed.stages.at(-1);
    if (stage) {
      stage.instructions.push({ keyword, args });
    } else if (keyword === 'ARG') {
      const [name = '', value = ''] = args.split('=', 2);
      parsed.globalArgs[name] = value;
    }
  }
  return parsed;
}
