// The levels `podroute node run` logs its agent's events at: what an operator running at
// `--log-level warning` must still see.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { eventLevel } from '../../../lib/cli/node-daemon.js';

const AGENT = fileURLToPath(new URL('../../../lib/agent', import.meta.url));

/** Every event name the agent's sources log, as `log('name'` or `.log('name'`. */
function agentEvents(): string[] {
  const names = new Set<string>();
  for (const f of readdirSync(AGENT).filter((n) => n.endsWith('.ts'))) {
    for (const m of readFileSync(join(AGENT, f), 'utf8').matchAll(/\blog\('([a-z-]+)'/g)) names.add(m[1]!);
  }
  return [...names].sort();
}

describe('node run: event levels', () => {
  it('a store outage and a lost or refused peer are warnings, so --log-level warning shows them', () => {
    for (const event of ['datastore-error', 'peer-down', 'peer-error']) assert.equal(eventLevel(event), 'warning', event);
  });

  it('an agent error is an error; sessions coming up and the agent starting are info', () => {
    assert.equal(eventLevel('error'), 'error');
    for (const event of ['peer-up', 'peer-added', 'starting', 'started', 'policy-accepted']) assert.equal(eventLevel(event), 'info', event);
  });

  it('every event the agent logs whose name says something failed is above info', () => {
    const events = agentEvents();
    assert.ok(events.length > 20, `only ${events.length} events found in ${AGENT}`);
    const failing = events.filter((e) => /-(error|failed|refused|down|timeout|conflict|risk|unknown|fallback|problems)$/.test(e));
    assert.ok(failing.includes('datastore-error'), `the scan missed datastore-error: ${failing.join(', ')}`);
    assert.deepEqual(
      failing.filter((e) => eventLevel(e) === 'info'),
      [],
      'events that report a failure but are logged at info',
    );
  });
});
