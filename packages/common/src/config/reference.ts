import { describeOptions, type PluginDefaults, type PluginSections } from './load.js';

function formatName(format: unknown): string {
  if (Array.isArray(format)) return format.map((v) => `\`${v}\``).join(' \\| ');
  if (format === Boolean) return 'boolean';
  if (format === Number) return 'number';
  if (format === String) return 'string';
  return String(format);
}

function defaultText(option: { default: unknown; option: string; section: string }): string {
  if (option.section === 'DEFAULT' && option.option === 'host') return "(the machine's hostname)";
  if (option.default === null) return '(unset)';
  if (Array.isArray(option.default)) return `\`${option.default.join(',')}\``;
  if (option.default === '') return '`""`';
  return `\`${String(option.default)}\``;
}

/**
 * docs/config-reference.md, generated from the core schema and the sections
 * of the plug-ins the conductor can load (a test fails when the file is stale).
 */
export function renderConfigReference(
  pluginSections: PluginSections = {},
  pluginDefaults: PluginDefaults = {},
): string {
  const lines = [
    '# Configuration reference',
    '',
    "<!-- Generated from packages/common/src/config/schema.ts and the interface descriptors of the conductor's registry by `npm run docs:generate`. Do not edit. -->",
    '',
    'Every process reads the same options, in ironic.conf style: `--config-file PATH`',
    '(repeatable; later files win), then environment variables named',
    '`BMAAS_<SECTION>__<OPTION>` in upper case (e.g. `BMAAS_API__PORT=6385`,',
    '`BMAAS_DEFAULT__HOST=conductor-1`). An unknown section or option, or a bad value,',
    'stops the process with one line naming the file or variable, the section, the',
    'option, the value and what was expected. A section that belongs to a plug-in (an',
    'interface package), and the options a plug-in adds to [deploy] or [agent] (a deploy',
    "interface's clean step priorities, its agent client's options), are read by the",
    'conductor, which loads every plug-in; the API, which loads none, leaves them unread.',
    '',
  ];
  let section = '';
  for (const option of describeOptions(pluginSections, pluginDefaults)) {
    if (option.section !== section) {
      if (section) lines.push('');
      section = option.section;
      lines.push(
        `## [${section}]`,
        '',
        '| option | type | default | environment | meaning |',
        '| --- | --- | --- | --- | --- |',
      );
    }
    lines.push(
      `| \`${option.option}\` | ${formatName(option.format)} | ${defaultText(option)} | \`${option.env}\` | ${option.doc.replace(/\|/g, '\\|')} |`,
    );
  }
  return `${lines.join('\n').trimEnd()}\n`;
}
