/**
 * Commands the scripts may use: all present in Debian's iPXE ROMs (checked
 * against /usr/lib/ipxe/qemu/efi-virtio.rom), which notably lack poweroff.
 */
const KNOWN_COMMANDS = new Set([
  'boot',
  'chain',
  'echo',
  'exit',
  'goto',
  'imgfree',
  'inc',
  'initrd',
  'iseq',
  'isset',
  'kernel',
  'reboot',
  'sanboot',
  'set',
  'sleep',
]);

/**
 * What would make an iPXE script misbehave: no `#!ipxe` line, a goto to a
 * label that does not exist, a label defined twice, an unknown command, an
 * unbalanced `${…}`, carriage returns, no final newline.
 */
export function ipxeScriptProblems(script: string): string[] {
  const problems: string[] = [];
  const lines = script.split('\n');
  if (lines[0] !== '#!ipxe') problems.push('first line is not #!ipxe');
  if (!script.endsWith('\n')) problems.push('no newline at the end');
  if (script.includes('\r')) problems.push('carriage return');

  const labels = new Set<string>();
  for (const line of lines) {
    const label = /^:(\S+)$/.exec(line)?.[1];
    if (label === undefined) continue;
    if (labels.has(label)) problems.push(`label ${label} defined twice`);
    labels.add(label);
  }

  lines.forEach((line, index) => {
    const where = `line ${index + 1}`;
    if (line === '' || line.startsWith('#') || line.startsWith(':')) return;
    if (!bracesBalance(line)) problems.push(`${where}: unbalanced \${…}`);
    // Statements are separated by || and &&; an empty one after a trailing || is iPXE's "ignore failure".
    for (const statement of line.split(/\s*(?:\|\||&&)\s*/)) {
      const [command, ...args] = statement.trim().split(/\s+/);
      if (!command) continue;
      if (!KNOWN_COMMANDS.has(command)) problems.push(`${where}: unknown command ${command}`);
      if (command === 'goto' && !labels.has(args[0] ?? '')) problems.push(`${where}: goto ${args[0]} has no label`);
    }
  });
  return problems;
}

function bracesBalance(line: string): boolean {
  let depth = 0;
  for (let i = 0; i < line.length; i++) {
    if (line[i] === '$' && line[i + 1] === '{') {
      depth++;
      i++;
    } else if (line[i] === '}') {
      if (depth === 0) return false;
      depth--;
    }
  }
  return depth === 0;
}
