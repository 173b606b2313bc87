// Atomic transactions: those not yet finished on every participant shard, oldest first, with
// their age, participants and state on each shard that holds one.

import { get } from './api.js';
import { el, message, replace, table } from './dom.js';

/** An age in milliseconds as an operator reads it. */
function age(ms) {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 120000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 7200000) return `${Math.round(ms / 60000)} min`;
  return `${(ms / 3600000).toFixed(1)} h`;
}

export const view = {
  mount(section) {
    this.out = el('div', { id: 'atomic-result' });
    replace(section,
      el('h2', { text: 'Atomic transactions' }),
      el('p', { class: 'hint', text: 'Atomic transactions across shards not yet finished on every participant: a prepared one holds its rows locked until its decision is applied. The daemon\u2019s resolver finishes them (an undecided one once older than the abandon age); shardlite tx resolve does it at once.' }),
      el('div', { class: 'buttons' },
        el('button', { type: 'button', id: 'atomic-refresh', onclick: () => this.show(), text: 'Refresh' })),
      this.out);
  },
  async show() {
    replace(this.out, message('info', 'reading every shard…'));
    try {
      const entries = await get('/api/sharding/atomic-transactions');
      if (entries.length === 0) {
        replace(this.out, message('ok', 'No unresolved atomic transactions.', { id: 'atomic-none' }));
        return;
      }
      const rows = entries.map((entry) => [
        entry.transactionId, entry.shardId, entry.state, age(entry.ageMs), entry.participants.join(', '),
      ]);
      replace(this.out,
        message('info', `${entries.length} unresolved on the shards that hold them`, { id: 'atomic-count' }),
        table(['transaction', 'shard', 'state', 'age', 'participants'], rows, { id: 'atomic-table', class: 'rows' }));
    } catch (error) {
      replace(this.out, message('error', error.message, { id: 'atomic-error' }));
    }
  },
};
