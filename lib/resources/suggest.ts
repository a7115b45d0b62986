// "Did you mean": the known field name closest to a misspelt one, so `ipipmode: Always` is an
// error pointing at ipipMode rather than a silent default.

/** Edit distance (insert, delete, substitute, swap of neighbours), case-insensitive. */
export function editDistance(a: string, b: string): number {
  const s = a.toLowerCase();
  const t = b.toLowerCase();
  const rows: number[][] = [];
  for (let i = 0; i <= s.length; i++) rows.push([i, ...new Array<number>(t.length).fill(0)]);
  for (let j = 0; j <= t.length; j++) rows[0]![j] = j;
  for (let i = 1; i <= s.length; i++) {
    const row = rows[i]!;
    const prev = rows[i - 1]!;
    for (let j = 1; j <= t.length; j++) {
      const cost = s[i - 1] === t[j - 1] ? 0 : 1;
      let d = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + cost);
      if (i > 1 && j > 1 && s[i - 1] === t[j - 2] && s[i - 2] === t[j - 1]) d = Math.min(d, rows[i - 2]![j - 2]! + 1);
      row[j] = d;
    }
  }
  return rows[s.length]![t.length]!;
}

/**
 * The known name `given` most likely stands for: the same name in another case first, else the
 * closest within a third of its length (at most 3 edits); undefined when nothing is close.
 */
export function closestName(given: string, known: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const k of known) {
    if (k.toLowerCase() === given.toLowerCase()) return k;
    const d = editDistance(given, k);
    if (d < bestDistance) {
      best = k;
      bestDistance = d;
    }
  }
  const limit = Math.min(3, Math.max(1, Math.floor(given.length / 3)));
  return bestDistance <= limit ? best : undefined;
}
