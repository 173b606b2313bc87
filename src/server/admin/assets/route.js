// The route preview (keyspace + key → canonical text, token, bucket, shard and why) and the
// route-aware tabs: each tab is bound to one route and runs SQL, browses tables and looks up
// documents on that route's shard only.

import { ApiError, get, post } from './api.js';
import { el, field, jsonBlock, message, pairs, replace, table } from './dom.js';
import { ownerClass, rangeOf } from './shards.js';

/** The canonical route text: lengths in UTF-16 code units, as JavaScript counts them. */
export function canonicalText(keyspace, key) {
  return `${keyspace.length}:${keyspace}|${key.length}:${key}`;
}

async function resolve(keyspace, key) {
  return post('/api/sharding/resolve', { keyspace, key });
}

function routeForm(id, context, submitLabel, onRoute) {
  const keyspace = el('input', { id: `${id}-keyspace`, required: true, value: context.map ? context.map.keyspace : '' });
  const key = el('input', { id: `${id}-key`, required: true, placeholder: 'route key' });
  return el('form', {
    class: 'inline', id: `${id}-form`,
    onsubmit: (event) => {
      event.preventDefault();
      onRoute(keyspace.value, key.value);
    },
  }, field('Keyspace', keyspace), field('Key', key), el('button', { type: 'submit', id: `${id}-submit`, text: submitLabel }));
}

export const previewView = {
  mount(section, context) {
    const out = el('div', { id: 'route-result' });
    replace(section,
      el('h2', { text: 'Route preview' }),
      el('p', { class: 'hint', text: 'Where a route key lives: the same answer as "shardlite token" and "shardlite resolve".' }),
      routeForm('route', context, 'Resolve', async (keyspace, key) => {
        try {
          const resolved = await resolve(keyspace, key);
          const map = context.map;
          const range = rangeOf(map, resolved.bucket);
          const why = resolved.source === 'pin'
            ? `pin (${resolved.key} is pinned to ${resolved.shardId}; its bucket belongs to ${range ? range.shardId : '?'})`
            : `bucket range [${range.startBucketInclusive}, ${range.endBucketExclusive})`;
          const rows = [
            ['canonical text', canonicalText(resolved.keyspace, resolved.key)],
            // JSON numbers lose precision past 2^53: the decimal comes from the exact hex.
            ['token', `${BigInt(`0x${resolved.tokenHex}`)} (0x${resolved.tokenHex})`],
            ['bucket', resolved.bucket],
            ['shard', el('span', { class: `swatch ${ownerClass(map, resolved.shardId)}`, text: resolved.shardId })],
            ['decided by', why],
            ['map version', resolved.mapVersion],
          ];
          replace(out, pairs(rows, { id: 'route-table', 'data-bucket': resolved.bucket, 'data-shard': resolved.shardId, 'data-source': resolved.source }));
        } catch (error) {
          replace(out, message('error', error.message, { id: 'route-error' }));
        }
      }),
      out);
  },
  async show() {},
};

let tabCounter = 0;

/** One route-bound tab: SQL, table pages and document look-ups on the route's shard. */
function routeTab(route, resolved, context) {
  tabCounter += 1;
  const id = `tab-${tabCounter}`;
  const sql = el('textarea', { id: `${id}-sql`, rows: 4, spellcheck: 'false', text: 'SELECT name FROM sqlite_schema WHERE type = \'table\'' });
  const sqlOut = el('div', { id: `${id}-sql-result`, class: 'result' });
  const runSql = async () => {
    replace(sqlOut, message('info', 'running…'));
    try {
      const result = await post('/api/sql/execute', { sql: sql.value }, { route });
      replace(sqlOut,
        message('ok', result.isQuery
          ? `${result.rows.length} row(s) from ${resolved.shardId} in ${result.elapsedMs.toFixed(1)} ms`
          : `${result.rowsAffected} row(s) changed on ${resolved.shardId}`, { 'data-shard': resolved.shardId }),
        result.isQuery ? table(result.columnNames, result.rows, { class: 'rows', 'data-shard': resolved.shardId }) : null);
    } catch (error) {
      replace(sqlOut, message('error', error.message, { class: 'message error' }));
    }
  };

  const tableSelect = el('select', { id: `${id}-table` });
  const tableOut = el('div', { id: `${id}-table-result`, class: 'result' });
  let page = 1;
  const browse = async (to) => {
    if (!tableSelect.value) return;
    try {
      const rows = await get(`/api/tables/${encodeURIComponent(tableSelect.value)}/rows?page=${to}&pageSize=20`, { route });
      page = rows.page;
      replace(tableOut,
        message('info', `page ${rows.page} of ${Math.max(1, rows.totalPages)} · ${rows.totalRows} row(s) on ${resolved.shardId}`),
        table(rows.columnNames, rows.rows, { class: 'rows' }),
        el('div', { class: 'buttons' },
          el('button', { type: 'button', disabled: rows.page <= 1, onclick: () => browse(page - 1), text: '← previous' }),
          el('button', { type: 'button', disabled: rows.page >= rows.totalPages, onclick: () => browse(page + 1), text: 'next →' })));
    } catch (error) {
      replace(tableOut, message('error', error.message));
    }
  };

  const collectionSelect = el('select', { id: `${id}-collection` });
  const docKey = el('input', { id: `${id}-doc-key`, placeholder: 'document key' });
  const docOut = el('div', { id: `${id}-doc-result`, class: 'result' });
  const lookUp = async () => {
    try {
      const doc = await get(`/api/collections/${encodeURIComponent(collectionSelect.value)}/documents/${encodeURIComponent(docKey.value)}`, { route });
      replace(docOut, message('ok', `document ${doc.key} on ${resolved.shardId}`), jsonBlock(doc.document));
    } catch (error) {
      replace(docOut, message('error', error instanceof ApiError && error.status === 404 ? `not found on ${resolved.shardId}: ${error.message}` : error.message));
    }
  };

  const loadLists = async () => {
    try {
      const [tables, collections] = await Promise.all([get('/api/tables', { route }), get('/api/collections', { route })]);
      replace(tableSelect, tables.map((name) => el('option', { value: name, text: name })));
      replace(collectionSelect, collections.map((name) => el('option', { value: name, text: name })));
    } catch (error) {
      replace(tableOut, message('error', error.message));
    }
  };
  loadLists();

  const panel = el('div', { class: 'tab-panel', id, 'data-shard': resolved.shardId, 'data-key': route.key },
    el('p', { class: 'tab-route' },
      `route ${route.keyspace} / ${route.key} → `,
      el('span', { class: `swatch ${ownerClass(context.map, resolved.shardId)}`, text: resolved.shardId, 'data-role': 'tab-shard' }),
      ` (bucket ${resolved.bucket}, ${resolved.source === 'pin' ? 'pinned' : 'bucket range'}, map version ${resolved.mapVersion})`),
    el('h3', { text: 'SQL' }),
    sql,
    el('div', { class: 'buttons' }, el('button', { type: 'button', id: `${id}-run`, onclick: runSql, text: `Run on ${resolved.shardId}` })),
    sqlOut,
    el('h3', { text: 'Table' }),
    el('div', { class: 'inline' }, field('Table', tableSelect),
      el('button', { type: 'button', id: `${id}-browse`, onclick: () => browse(1), text: 'Browse' }),
      el('button', { type: 'button', onclick: loadLists, text: 'Reload lists' })),
    tableOut,
    el('h3', { text: 'Collection document' }),
    el('div', { class: 'inline' }, field('Collection', collectionSelect), field('Key', docKey),
      el('button', { type: 'button', id: `${id}-lookup`, onclick: lookUp, text: 'Look up' })),
    docOut);
  return { id, route, resolved, panel };
}

export const tabsView = {
  tabs: [],
  mount(section, context) {
    const strip = el('div', { id: 'route-tabs', class: 'tab-strip', role: 'tablist' });
    const panels = el('div', { id: 'route-panels' });
    const status = el('div', { id: 'route-tabs-status' });
    const select = (tab) => {
      for (const other of this.tabs) {
        other.panel.hidden = other !== tab;
        other.button.classList.toggle('active', other === tab);
      }
    };
    replace(section,
      el('h2', { text: 'Route tabs' }),
      el('p', { class: 'hint', text: 'Open a tab on a route: everything in it runs on that route\'s shard, and the tab says which shard that is.' }),
      routeForm('newtab', context, 'Open tab', async (keyspace, key) => {
        try {
          const resolved = await resolve(keyspace, key);
          const route = { keyspace: resolved.keyspace, key: resolved.key };
          const tab = routeTab(route, resolved, context);
          tab.button = el('button', { type: 'button', role: 'tab', class: 'tab', 'data-tab': tab.id, onclick: () => select(tab),
            text: `${route.key} → ${resolved.shardId}` });
          this.tabs.push(tab);
          strip.append(tab.button);
          panels.append(tab.panel);
          select(tab);
          replace(status);
        } catch (error) {
          replace(status, message('error', error.message));
        }
      }),
      status, strip, panels);
  },
  async show() {},
};
