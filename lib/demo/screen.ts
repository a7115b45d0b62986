// Where the view goes. On a terminal it is redrawn in place (ANSI: cursor home, each line
// cleared to its end, the rest of the screen cleared); into a pipe or a file it is printed as
// plain snapshots, with a progress line only when the counts change.
const HOME = '\x1b[H';
const CLEAR_SCREEN = '\x1b[2J';
const CLEAR_LINE = '\x1b[K';
const CLEAR_BELOW = '\x1b[J';
const HIDE_CURSOR = '\x1b[?25l';
const SHOW_CURSOR = '\x1b[?25h';

export class Screen {
  readonly live: boolean;
  private drawn = false;
  private lastCounts = '';

  constructor(
    private readonly out: NodeJS.WritableStream & { columns?: number; rows?: number },
    options: { live: boolean },
  ) {
    this.live = options.live;
  }

  /** The whole view: in place on a terminal, else as a snapshot. */
  frame(lines: readonly string[]): void {
    if (!this.live) return this.block(lines);
    const cols = this.out.columns ?? 200;
    const rows = this.out.rows ?? 1000;
    let shown = lines.map((l) => (l.length > cols ? l.slice(0, cols) : l));
    if (shown.length > rows - 1) {
      const hidden = shown.length - (rows - 2);
      shown = [...shown.slice(0, rows - 2), `… ${hidden} more lines: a taller terminal shows them, or run with --once`];
    }
    const start = this.drawn ? HOME : HIDE_CURSOR + CLEAR_SCREEN + HOME;
    this.drawn = true;
    this.out.write(`${start}${shown.map((l) => l + CLEAR_LINE).join('\n')}\n${CLEAR_BELOW}`);
  }

  /** A terminal's width, for side-by-side columns; undefined when not live. */
  get width(): number | undefined {
    return this.live ? (this.out.columns ?? 80) : undefined;
  }

  /** The last view, whole: a terminal's screen is cleared first and scrolls as it must. */
  final(lines: readonly string[]): void {
    if (this.live) this.out.write(HOME + CLEAR_BELOW);
    this.block(lines);
  }

  block(lines: readonly string[]): void {
    this.out.write(`${lines.join('\n')}\n`);
    this.lastCounts = '';
  }

  line(text: string): void {
    this.out.write(`${text}\n`);
  }

  /** A progress line, when its counts differ from the last one printed. */
  progress(text: string): void {
    const counts = text.replace(/\s*\(\d+\.\d s\)$|^converged in \d+\.\d s: /, '');
    if (counts === this.lastCounts) return;
    this.lastCounts = counts;
    this.line(text);
  }

  end(): void {
    if (this.live && this.drawn) this.out.write(SHOW_CURSOR);
  }
}
