import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import convict from 'convict';
import ini from 'ini';
import { ConfigError } from '../errors.js';
import {
  CONFIG_FORMATS,
  type ConfigSchema,
  configSchema,
  PLUGIN_EXTENSIBLE_SECTIONS,
  type PluginExtensibleSection,
} from './schema.js';

const EXTENSIBLE: ReadonlySet<string> = new Set(PLUGIN_EXTENSIBLE_SECTIONS);

type Widen<T> = T extends string ? string : T extends number ? number : T extends boolean ? boolean : T;

/** One option: convict's schema entry, with the documentation every option must have. */
export interface OptionSchema {
  doc: string;
  format: unknown;
  default: unknown;
  /** BMAAS_<SECTION>__<OPTION>, upper case. */
  env: string;
  sensitive?: boolean;
}
/** The options of one section, by name. */
export type SectionSchema = Readonly<Record<string, OptionSchema>>;
/** The typed, frozen values of a section. */
export type SectionValues<S> = {
  readonly [Option in keyof S]: S[Option] extends { default: infer D } ? Widen<D> : never;
};

/** The typed, frozen configuration every process receives (the core sections; plug-ins read their own). */
export type BmaasConfig = {
  readonly [Section in keyof ConfigSchema]: SectionValues<ConfigSchema[Section]>;
};
export type ConfigSection<S extends keyof BmaasConfig> = BmaasConfig[S];

/**
 * Sections of plug-ins (each interface descriptor's own, and the options they
 * add to the core sections of PLUGIN_EXTENSIBLE_SECTIONS), merged with the
 * core schema by the processes that load plug-ins; or 'ignore' in a process
 * that loads none (the API): sections outside the core schema, and unknown
 * options of those extensible core sections, are then left unread, for the
 * conductor to check.
 */
export type PluginSections = Readonly<Record<string, SectionSchema>> | 'ignore';

export interface LoadConfigOptions {
  /** ironic.conf-style INI files, applied in order (later wins). */
  configFiles?: readonly string[];
  /** Environment to read BMAAS_<SECTION>__<OPTION> from; pass {} to ignore it. */
  env?: NodeJS.ProcessEnv;
  /** Values applied last, above files and environment (used by launchers and tests). */
  overrides?: ConfigOverrides;
  /** Sections of the plug-ins this process loads; default none. */
  pluginSections?: PluginSections;
  /** Defaults the loaded plug-ins give core options (the interfaces enabled unless configured otherwise). */
  pluginDefaults?: PluginDefaults;
}
/**
 * Values to apply over files and environment: the core's options typed, and
 * any other (plug-ins' sections, and their options of [deploy] and [agent])
 * checked against the schema at load.
 */
export type ConfigOverrides = {
  readonly [Section in keyof BmaasConfig]?: DeepPartial<BmaasConfig[Section]> &
    (Section extends PluginExtensibleSection ? Readonly<Record<string, unknown>> : unknown);
} & Readonly<Record<string, Readonly<Record<string, unknown>>>>;
/** Defaults of core options, by section and option, that replace the schema's own. */
export type PluginDefaults = Readonly<Record<string, Readonly<Record<string, unknown>>>>;
export type DeepPartial<T> = {
  [K in keyof T]?: T[K] extends object ? (T[K] extends unknown[] ? T[K] : DeepPartial<T[K]>) : T[K];
};

type Schema = Readonly<Record<string, SectionSchema>>;

/**
 * The core schema with the plug-ins' sections and the defaults they give core
 * options; a plug-in may not take a core section or another's, nor give a
 * default to an option the core schema does not have. It may add options to
 * an extensible core section, but not redeclare one of the core's.
 */
export function mergedSchema(pluginSections: PluginSections | undefined, pluginDefaults: PluginDefaults = {}): Schema {
  const core = withDefaults(configSchema as unknown as Schema, pluginDefaults);
  if (pluginSections === undefined || pluginSections === 'ignore') return core;
  const merged: Record<string, SectionSchema> = { ...core };
  for (const [section, options] of Object.entries(pluginSections)) {
    const coreOptions = core[section];
    if (coreOptions === undefined) {
      merged[section] = options;
      continue;
    }
    if (!EXTENSIBLE.has(section)) throw new ConfigError(`plug-in section [${section}] is a core section`);
    const taken = Object.keys(options).find((option) => Object.hasOwn(coreOptions, option));
    if (taken) throw new ConfigError(`plug-in option [${section}]${taken} is a core option`);
    merged[section] = { ...coreOptions, ...options };
  }
  return merged;
}

function withDefaults(core: Schema, defaults: PluginDefaults): Schema {
  const schema: Record<string, SectionSchema> = { ...core };
  for (const [section, options] of Object.entries(defaults)) {
    for (const [option, value] of Object.entries(options)) {
      const known = schemaOf(core, section, option);
      if (!known) throw new ConfigError(`plug-in default for [${section}]${option}: no such core option`);
      schema[section] = { ...schema[section], [option]: { ...known, default: value } };
    }
  }
  return schema;
}

function schemaOf(schema: Schema, section: string, option: string): OptionSchema | undefined {
  const sec = schema[section];
  return sec && Object.hasOwn(sec, option) ? sec[option] : undefined;
}

function optionsOf(schema: Schema, section: string): string[] {
  return Object.keys(schema[section] ?? {});
}

let formatsRegistered = false;
function registerFormats(): void {
  // convict keeps formats in a library-wide table; adding ours once is harmless.
  if (!formatsRegistered) {
    convict.addFormats(CONFIG_FORMATS);
    formatsRegistered = true;
  }
}

const NUMERIC_FORMATS = new Set(['port', 'nat', 'int', 'positive-number', 'positive-int', 'duration', 'timestamp']);
const TRUE = new Set(['true', 'yes', 'on', '1']);
const FALSE = new Set(['false', 'no', 'off', '0']);

/** Turns text from an INI file or the environment into the option's type. Bad text is left for validation to reject. */
function coerce(schema: OptionSchema, raw: unknown): unknown {
  const text = typeof raw === 'string' ? raw.trim() : raw;
  if (typeof text !== 'string') return text;
  const format = schema.format;
  if (format === Boolean) {
    const lower = text.toLowerCase();
    if (TRUE.has(lower)) return true;
    if (FALSE.has(lower)) return false;
    return text;
  }
  if (format === Number || (typeof format === 'string' && NUMERIC_FORMATS.has(format))) {
    return /^-?\d+(\.\d+)?$/.test(text) ? Number(text) : text;
  }
  if (typeof format === 'string' && CONFIG_FORMATS[format]?.coerce) {
    return CONFIG_FORMATS[format].coerce?.(text);
  }
  return text;
}

function describeFormat(schema: OptionSchema): string {
  const f = schema.format;
  if (Array.isArray(f)) return `one of ${f.join(', ')}`;
  if (f === Boolean) return 'true or false';
  if (f === Number) return 'a number';
  if (f === String) return 'a string';
  if (f === 'port') return 'a port number 0-65535';
  if (f === 'nat') return 'a whole number >= 0';
  return String(f);
}

/** Validates one value with convict's own format checks; returns the reason it is bad, or undefined. */
function checkValue(schema: OptionSchema, value: unknown): string | undefined {
  // convict turns any string into a boolean; we want a clear refusal instead.
  if (schema.format === Boolean && typeof value !== 'boolean')
    return `not a boolean (expected ${describeFormat(schema)})`;
  const single = convict({ v: { doc: schema.doc, format: schema.format as never, default: schema.default as never } });
  try {
    single.load({ v: value });
    single.validate({ allowed: 'strict' });
    return undefined;
  } catch (error) {
    const reason = (error as Error).message.replace(/^v: /, '').split('\n')[0] ?? 'invalid value';
    return `${reason} (expected ${describeFormat(schema)})`;
  }
}

/** Levenshtein distance, for "did you mean" hints on typos. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(
        (previous[j] as number) + 1,
        (current[j - 1] as number) + 1,
        (previous[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    previous = current;
  }
  return previous[b.length] as number;
}

function suggestion(name: string, known: string[]): string {
  const ranked = known.map((k) => [k, editDistance(name.toLowerCase(), k.toLowerCase())] as const);
  const best = ranked.sort((x, y) => x[1] - y[1])[0];
  return best && best[1] <= Math.max(2, Math.floor(name.length / 3)) ? `; did you mean "${best[0]}"?` : '';
}

type Values = Record<string, Record<string, unknown>>;

/** The schema a load checks against, and whether sections outside it are left to another process. */
interface LoadSchema {
  schema: Schema;
  ignoreOtherSections: boolean;
}

function setValue(
  { schema: all, ignoreOtherSections }: LoadSchema,
  values: Values,
  source: string,
  section: string,
  option: string,
  raw: unknown,
): void {
  const sections = Object.keys(all);
  if (!Object.hasOwn(all, section)) {
    if (ignoreOtherSections) return;
    throw new ConfigError(
      `${source}: unknown section [${section}]${suggestion(section, sections)} (known: ${sections.join(', ')})`,
    );
  }
  const schema = schemaOf(all, section, option);
  if (!schema) {
    if (ignoreOtherSections && EXTENSIBLE.has(section)) return;
    throw new ConfigError(
      `${source}: [${section}] unknown option "${option}"${suggestion(option, optionsOf(all, section))}`,
    );
  }
  const value = coerce(schema, raw);
  const reason = checkValue(schema, value);
  if (reason) {
    const shown = schema.sensitive ? '"***"' : JSON.stringify(raw);
    throw new ConfigError(`${source}: [${section}] ${option} = ${shown}: ${reason}`);
  }
  values[section] ??= {};
  (values[section] as Record<string, unknown>)[option] = value;
}

function readIniFile(load: LoadSchema, path: string, values: Values): void {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError(`${path}: cannot read config file (${(error as NodeJS.ErrnoException).code ?? error})`);
  }
  const parsed = ini.parse(text) as Record<string, unknown>;
  for (const [section, body] of Object.entries(parsed)) {
    if (body === null || typeof body !== 'object' || Array.isArray(body)) {
      throw new ConfigError(`${path}: option "${section}" is outside any [section]`);
    }
    for (const [option, raw] of Object.entries(body as Record<string, unknown>)) {
      if (raw !== null && typeof raw === 'object') {
        throw new ConfigError(`${path}: unknown section [${section}.${option}]`);
      }
      // ini turns bare true/false into booleans; String options want the text back.
      setValue(load, values, path, section, option, typeof raw === 'boolean' ? String(raw) : raw);
    }
  }
}

const EXTENSIBLE_BY_ENV = new Set(PLUGIN_EXTENSIBLE_SECTIONS.map((section) => section.toUpperCase()));

function readEnvironment(load: LoadSchema, env: NodeJS.ProcessEnv, values: Values): void {
  const known = new Map<string, [string, string]>();
  const { schema } = load;
  for (const section of Object.keys(schema)) {
    for (const option of optionsOf(schema, section)) {
      known.set((schemaOf(schema, section, option) as OptionSchema).env, [section, option]);
    }
  }
  const sectionsByEnv = new Set(Object.keys(schema).map((section) => section.toUpperCase()));
  for (const [name, raw] of Object.entries(env)) {
    if (!name.startsWith('BMAAS_') || raw === undefined) continue;
    const target = known.get(name);
    if (!target) {
      const section = /^BMAAS_([A-Z_]+?)__[A-Z0-9_]+$/.exec(name)?.[1];
      if (section === undefined) continue;
      if (load.ignoreOtherSections && (!sectionsByEnv.has(section) || EXTENSIBLE_BY_ENV.has(section))) continue;
      throw new ConfigError(`environment: ${name} names no known option`);
    }
    setValue(load, values, `environment ${name}`, target[0], target[1], raw);
  }
}

function applyOverrides(load: LoadSchema, overrides: LoadConfigOptions['overrides'], values: Values): void {
  for (const [section, body] of Object.entries(overrides ?? {})) {
    for (const [option, value] of Object.entries(body ?? {})) {
      setValue(load, values, 'overrides', section, option, value);
    }
  }
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}

/**
 * Loads and validates the configuration: schema defaults, then each config
 * file in order, then the environment, then overrides. Any unknown section or
 * option, or a bad value, throws a ConfigError whose message is one line
 * naming where it came from.
 */
export function loadConfig(options: LoadConfigOptions = {}): BmaasConfig {
  registerFormats();
  const load: LoadSchema = {
    schema: mergedSchema(options.pluginSections, options.pluginDefaults),
    ignoreOtherSections: options.pluginSections === 'ignore',
  };
  const values: Values = {};
  for (const file of options.configFiles ?? []) readIniFile(load, file, values);
  readEnvironment(load, options.env ?? process.env, values);
  if (options.overrides) applyOverrides(load, options.overrides, values);
  // Env is applied above with file/line context, so convict must not read it again.
  const config = convict(load.schema as never, { env: {}, args: [] });
  config.load(values);
  config.validate({ allowed: 'strict' });
  const result = config.getProperties() as BmaasConfig;
  const { heartbeat_interval: interval, heartbeat_timeout: timeout } = result.conductor;
  // The registration is a lease of heartbeat_timeout (fencing): a longer interval fences every conductor.
  if (interval >= timeout) {
    throw new ConfigError(
      `[conductor] heartbeat_interval = ${interval} must be less than heartbeat_timeout = ${timeout}: a conductor would stop acting on its nodes between two heartbeats`,
    );
  }
  (result.DEFAULT as { default_conductor_group: string }).default_conductor_group =
    result.DEFAULT.default_conductor_group.toLowerCase();
  return deepFreeze(structuredClone(result));
}

/**
 * `--config-file PATH` (repeatable, also `--config-file=PATH`) and the words that are no
 * option (a command) from a command line, through util.parseArgs; other flags are left alone.
 */
export function configFileArgs(argv: readonly string[]): { configFiles: string[]; positionals: string[] } {
  const { values, positionals } = parseArgs({
    args: [...argv],
    options: { 'config-file': { type: 'string', multiple: true } },
    strict: false,
    allowPositionals: true,
  });
  const files = values['config-file'] ?? [];
  if (files.some((file) => typeof file !== 'string')) throw new ConfigError('--config-file needs a path');
  return { configFiles: files as string[], positionals };
}

/** The `--config-file` paths of a command line (configFileArgs). */
export function configFilesFromArgs(argv: readonly string[]): string[] {
  return configFileArgs(argv).configFiles;
}

/**
 * A plug-in's section of a loaded configuration (loadConfig keeps every
 * section it was given the schema of); {} when the section is not there.
 */
export function pluginSection<S>(config: BmaasConfig, section: string): SectionValues<S> {
  return ((config as unknown as Record<string, unknown>)[section] ?? {}) as SectionValues<S>;
}

/** Every option with its schema (the plug-ins' sections after the core ones), for the generated reference. */
export function describeOptions(
  pluginSections: PluginSections = {},
  pluginDefaults: PluginDefaults = {},
): Array<{ section: string; option: string } & OptionSchema> {
  const schema = mergedSchema(pluginSections, pluginDefaults);
  return Object.keys(schema).flatMap((section) =>
    optionsOf(schema, section).map((option) => ({
      section,
      option,
      ...(schemaOf(schema, section, option) as OptionSchema),
    })),
  );
}
