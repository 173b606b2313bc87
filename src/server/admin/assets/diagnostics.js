// Diagnostics: read-only SQL on every shard at once, each shard's rows or error shown apart, or
// one SELECT merged across shards into one answer.

import { post } from './api.js';
import { el, message, replace, table } from './dom.js';

export const view = {
  mount(section) {
    const sql = el('textarea', { id: 'diagnostics-sql', rows: 3, spellcheck: 'false', text: 'SELECT count(*) AS tables FROM sqlite_schema WHERE type = \'table\'' });
    const out = el('div', { id: 'diagnostics-result' });
    const run = async () => {
      replace(out, message('info', 'running on every shard…'));
      try {
        const outcomes = await post('/api/sharding/sql/read-all', { sql: sql.value });
        replace(out, outcomes.map((outcome) => el('div', { class: 'shard-outcome', 'data-shard': outcome.shardId, 'data-ok': String(!outcome.error) },
          el('h3', { text: outcome.shardId }),
          outcome.error
            ? message('error', `${outcome.errorCode || 'error'}: ${outcome.error}`)
            : table(outcome.result.columnNames, outcome.result.rows, { class: 'rows' }))));
      } catch (error) {
        replace(out, message('error', error.message, { id: 'diagnostics-error' }));
      }
    };
    const merge = async () => {
      replace(out, message('info', 'merging every shard\u2019s rows…'));
      try {
        const result = await post('/api/sharding/query', { sql: sql.value });
        replace(out, el('div', { id: 'diagnostics-merged' },
          el('h3', { text: 'All shards, merged' }),
          table(result.columnNames, result.rows, { class: 'rows' })));
      } catch (error) {
        const code = error.errorCode ? `${error.errorCode}: ` : '';
        replace(out, message('error', `${code}${error.message}`, { id: 'diagnostics-error' }));
      }
    };
    replace(section,
      el('h2', { text: 'Diagnostics' }),
      el('p', { class: 'hint', text: 'Read-only SQL on every enabled shard in parallel. A statement that could write is refused before anything runs.' }),
      sql,
      el('p', { class: 'hint', text: 'Merge runs one SELECT across shards and answers as one database holding every shard\u2019s rows would; what cannot be answered exactly is refused.' }),
      el('div', { class: 'buttons' },
        el('button', { type: 'button', id: 'diagnostics-run', onclick: run, text: 'Run on every shard' }),
        el('button', { type: 'button', id: 'diagnostics-merge', onclick: merge, text: 'Merge into one answer' })),
      out);
  },
  async show() {},
};
