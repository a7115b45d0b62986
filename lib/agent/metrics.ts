// A few Prometheus metrics in text exposition format (0.0.4), no client library: gauges read
// at scrape time, counters, and one histogram.

export type Labels = Record<string, string>;

function labelText(l: Labels | undefined): string {
  if (!l) return '';
  const parts = Object.entries(l).map(([k, v]) => `${k}="${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`);
  return parts.length ? `{${parts.join(',')}}` : '';
}

interface Family {
  name: string;
  help: string;
  type: 'gauge' | 'counter' | 'histogram';
  render(): string[];
}

export class Counter {
  private readonly values = new Map<string, { labels: Labels | undefined; value: number }>();
  constructor(readonly name: string) {}
  inc(labels?: Labels, by = 1): void {
    const k = labelText(labels);
    const v = this.values.get(k) ?? { labels, value: 0 };
    v.value += by;
    this.values.set(k, v);
  }
  get(labels?: Labels): number {
    return this.values.get(labelText(labels))?.value ?? 0;
  }
  lines(): string[] {
    if (this.values.size === 0) return [`${this.name} 0`];
    return [...this.values.values()].map((v) => `${this.name}${labelText(v.labels)} ${v.value}`);
  }
}

export class Histogram {
  private readonly counts: number[];
  private sum = 0;
  private count = 0;
  constructor(
    readonly name: string,
    readonly buckets: readonly number[],
  ) {
    this.counts = buckets.map(() => 0);
  }
  observe(v: number): void {
    this.sum += v;
    this.count++;
    for (let i = 0; i < this.buckets.length; i++) if (v <= this.buckets[i]!) this.counts[i]!++;
  }
  lines(): string[] {
    return [
      ...this.buckets.map((b, i) => `${this.name}_bucket{le="${b}"} ${this.counts[i]}`),
      `${this.name}_bucket{le="+Inf"} ${this.count}`,
      `${this.name}_sum ${this.sum}`,
      `${this.name}_count ${this.count}`,
    ];
  }
}

export class Registry {
  private readonly families: Family[] = [];

  gauge(name: string, help: string, read: () => { labels?: Labels; value: number }[]): void {
    this.families.push({ name, help, type: 'gauge', render: () => read().map((s) => `${name}${labelText(s.labels)} ${s.value}`) });
  }

  counter(name: string, help: string): Counter {
    const c = new Counter(name);
    this.families.push({ name, help, type: 'counter', render: () => c.lines() });
    return c;
  }

  histogram(name: string, help: string, buckets: readonly number[]): Histogram {
    const h = new Histogram(name, buckets);
    this.families.push({ name, help, type: 'histogram', render: () => h.lines() });
    return h;
  }

  render(): string {
    const out: string[] = [];
    for (const f of this.families) {
      out.push(`# HELP ${f.name} ${f.help}`, `# TYPE ${f.name} ${f.type}`, ...f.render());
    }
    return out.join('\n') + '\n';
  }
}
