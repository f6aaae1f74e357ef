import winston from 'winston';

export type Logger = winston.Logger;

export interface RootLoggerOptions {
  level: string;
  /** auto = readable text on a TTY, JSON lines otherwise. */
  format: 'auto' | 'json' | 'text' | string;
  /** Where lines go; standard error by default so stdout stays free for commands' output. */
  stream?: NodeJS.WritableStream;
  /** Fields on every line, e.g. { service: 'api' }. */
  defaultMeta?: Record<string, unknown>;
}

const readable = winston.format.printf((info) => {
  const { timestamp, level, message, component, nodeUuid, requestId, service, ...rest } = info as Record<
    string,
    unknown
  >;
  const tags = [service, component, nodeUuid && `node=${nodeUuid}`, requestId && `req=${requestId}`]
    .filter(Boolean)
    .join(' ');
  const extra = Object.keys(rest).length ? ` ${JSON.stringify(rest)}` : '';
  return `${timestamp} ${level} [${tags}] ${message}${extra}`;
});

/**
 * The one root logger of a process. Components take children of it
 * (`logger.child({ component: 'boot-config' })`), and per-node or per-request
 * work a further child carrying nodeUuid / requestId.
 */
export function createRootLogger(options: RootLoggerOptions): Logger {
  const stream = options.stream ?? process.stderr;
  const useJson = options.format === 'json' || (options.format === 'auto' && !(stream as { isTTY?: boolean }).isTTY);
  return winston.createLogger({
    level: options.level,
    defaultMeta: options.defaultMeta,
    format: useJson
      ? winston.format.combine(
          winston.format.timestamp(),
          winston.format.errors({ stack: true }),
          winston.format.json(),
        )
      : winston.format.combine(
          winston.format.timestamp({ format: 'HH:mm:ss.SSS' }),
          winston.format.errors({ stack: true }),
          winston.format.colorize(),
          readable,
        ),
    transports: [new winston.transports.Stream({ stream })],
  });
}

/**
 * Whether `logger` writes debug lines: its level against the debug level.
 * winston's isDebugEnabled() builds an array of its transports on every
 * call, which the boot path paid per request; the transports made here have
 * no level of their own, so the logger's level decides alone.
 */
export function writesDebug(logger: Logger): boolean {
  const { levels } = logger;
  return (levels[logger.level] ?? -1) >= (levels.debug ?? Number.POSITIVE_INFINITY);
}

/** A logger that drops everything, for tests that do not look at logs. */
export function createSilentLogger(): Logger {
  return winston.createLogger({ silent: true, transports: [new winston.transports.Console({ silent: true })] });
}

/**
 * Keeps a service running when whoever reads its standard output and error
 * goes away (the `npm start` launcher killed outright, a log collector
 * restarted): a write to a closed pipe fails with EPIPE, which would
 * otherwise end the process at its next log line, its own or a library's.
 * What is written meanwhile is lost; any other stream error still ends it.
 */
export function survivePipeLoss(streams: readonly NodeJS.WriteStream[] = [process.stdout, process.stderr]): void {
  for (const stream of streams) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE') throw error;
    });
  }
}
