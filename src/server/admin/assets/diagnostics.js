// Diagnostics: read-only SQL on every shard at once, each shard's rows or error shown apart.

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
    replace(section,
      el('h2', { text: 'Diagnostics' }),
      el('p', { class: 'hint', text: 'Read-only SQL on every enabled shard in parallel. A statement that could write is refused before anything runs.' }),
      sql,
      el('div', { class: 'buttons' }, el('button', { type: 'button', id: 'diagnostics-run', onclick: run, text: 'Run on every shard' })),
      out);
  },
  async show() {},
};
