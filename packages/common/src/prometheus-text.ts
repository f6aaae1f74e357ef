/** One sample of a scrape: metric name, labels and value. */
export interface PrometheusSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** The samples of a scrape in the Prometheus text format (comments and blank lines skipped). */
export function parsePrometheusText(text: string): PrometheusSample[] {
  const samples: PrometheusSample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = SAMPLE.exec(line);
    if (!match) throw new Error(`not a Prometheus sample: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? '').matchAll(LABEL)) {
      labels[key as string] = (value as string).replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    }
    samples.push({ name: match[1] as string, labels, value: Number(match[3]) });
  }
  return samples;
}

/**
 * The sum of the samples named `name` whose labels include `labels` (0 when
 * none): e.g. a counter over every value of the labels left out.
 */
export function sampleSum(
  samples: readonly PrometheusSample[],
  name: string,
  labels: Record<string, string> = {},
): number {
  let sum = 0;
  for (const sample of samples) {
    if (sample.name !== name) continue;
    if (Object.entries(labels).every(([key, value]) => sample.labels[key] === value)) sum += sample.value;
  }
  return sum;
}
