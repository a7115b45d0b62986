// Log lines with a level, as JSON (one object a line, for collectors) or text (for people).
// Levels and their names are Calico's (logSeverityScreen): Debug, Info, Warning, Error; "none"
// silences. A line below the level is never formatted.

export type LogLevel = 'debug' | 'info' | 'warning' | 'error' | 'none';
export type LogFormat = 'json' | 'text';

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warning: 30, error: 40, none: 100 };

/** A level as a flag or Calico's logSeverityScreen gives it (any case; warn and fatal too); errors name `field`. */
export function logLevel(value: unknown, field: string): LogLevel {
  const v = typeof value === 'string' ? value.toLowerCase() : value;
  if (v === 'warn') return 'warning';
  if (v === 'fatal' || v === 'panic') return 'error';
  if (typeof v === 'string' && Object.hasOwn(RANK, v)) return v as LogLevel;
  throw new Error(`${field}: ${JSON.stringify(value)} must be debug, info, warning, error or none`);
}

export function logFormat(value: unknown, field: string): LogFormat {
  if (value === 'json' || value === 'text') return value;
  throw new Error(`${field}: ${JSON.stringify(value)} must be json or text`);
}

export interface Logger {
  readonly level: LogLevel;
  log(level: Exclude<LogLevel, 'none'>, event: string, fields?: Record<string, unknown>): void;
  enabled(level: Exclude<LogLevel, 'none'>): boolean;
}

function textValue(v: unknown): string {
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  return typeof v === 'string' && /^[^\s"=]+$/.test(v) ? s : JSON.stringify(s);
}

export function createLogger(options: { level?: LogLevel; format?: LogFormat; write?: (line: string) => void } = {}): Logger {
  const level = options.level ?? 'info';
  const format = options.format ?? 'json';
  const write = options.write ?? ((line: string) => process.stderr.write(line));
  const enabled = (l: Exclude<LogLevel, 'none'>) => RANK[l] >= RANK[level];
  return {
    level,
    enabled,
    log(l, event, fields = {}) {
      if (!enabled(l)) return;
      const time = new Date().toISOString();
      if (format === 'json') write(`${JSON.stringify({ time, level: l, event, ...fields })}\n`);
      else {
        const rest = Object.entries(fields)
          .filter(([, v]) => v !== undefined)
          .map(([k, v]) => `${k}=${textValue(v)}`)
          .join(' ');
        write(`${time} ${l.toUpperCase().padEnd(7)} ${event}${rest ? ` ${rest}` : ''}\n`);
      }
    },
  };
}
