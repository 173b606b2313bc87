// Shard directories: a directory's entries a page at a time, resolving a lookup key, and the six
// entry changes, each confirmed with what it will write.

import { ApiError, get, post } from './api.js';
import { confirmAction, el, field, message, pairs, replace, table } from './dom.js';

const OPERATIONS = ['reserve', 'activate', 'upsert', 'disable', 'mark-stale', 'delete'];
const STATES = ['Active', 'Reserved', 'Moving', 'Disabled', 'Deleted', 'Stale'];

const $ = (id) => document.getElementById(id);

/** The entries view's paging: the `after` of each page shown so far. */
const paging = { directory: null, afters: [null], next: null };

async function showEntries(directory) {
  const out = $('directory-entries-out');
  const limit = Number($('directory-limit').value) || 50;
  const after = paging.afters[paging.afters.length - 1];
  const query = new URLSearchParams({ limit: String(limit) });
  if (after !== null) query.set('after', after);
  try {
    const page = await get(`/api/sharding/directory/${encodeURIComponent(directory)}/entries?${query}`);
    paging.next = page.nextAfter || null;
    const first = (paging.afters.length - 1) * limit;
    replace(out,
      el('p', { id: 'directory-range', class: 'hint',
        text: page.entries.length
          ? `entries ${first + 1} to ${first + page.entries.length} of ${page.entryCount}`
          : `no entries (${page.entryCount} in the directory)` }),
      table(['lookup key', 'state', 'route key', 'shard', 'map version'],
        page.entries.map((e) => [e.lookupKey, e.state, e.routeKey, e.shardId, e.mapVersion]),
        { id: 'directory-entries', 'data-count': page.entryCount }));
    $('directory-prev').disabled = paging.afters.length === 1;
    $('directory-next').disabled = !paging.next;
  } catch (error) {
    replace(out, message('error', error.message, { id: 'directory-entries-error' }));
  }
}

function restartPaging(directory) {
  paging.directory = directory;
  paging.afters = [null];
  paging.next = null;
  return showEntries(directory);
}

async function resolve(directory) {
  const out = $('directory-resolution-out');
  const lookupKey = $('directory-lookup').value;
  try {
    const found = await post('/api/sharding/directory/resolve', {
      directoryName: directory, lookupKey, includeInactive: $('directory-inactive').checked,
    });
    const { entry, routeResolution: route } = found;
    replace(out, pairs([
      ['lookup key', entry.lookupKey],
      ['state', entry.state],
      ['route', `${entry.targetKeyspace} / ${entry.routeKey}`],
      ['shard', route.shardId],
      ['bucket', route.bucket],
      ['entry written by map version', entry.mapVersion],
    ], { id: 'directory-resolution', 'data-shard': route.shardId, 'data-state': entry.state }));
  } catch (error) {
    replace(out, message('error', error.message, { id: 'directory-resolution-error' }));
  }
}

/** The change the form describes, and the lines the confirmation lists. */
function describe(directory, context) {
  const operation = $('directory-operation').value;
  const body = { directoryName: directory, lookupKey: $('directory-key').value, activate: $('directory-activate').checked };
  const lines = [`${operation} entry ${body.lookupKey} in ${directory}`];
  if (operation === 'reserve' || operation === 'upsert') {
    body.targetKeyspace = context.map.keyspace;
    body.routeKey = $('directory-route-key').value;
    lines.push(`route ${body.targetKeyspace} / ${body.routeKey}`);
  }
  if (operation === 'upsert') {
    body.state = $('directory-state').value;
    lines.push(`state ${body.state}`);
  }
  if (operation === 'delete' && $('directory-remove').checked) {
    body.removeEntry = true;
    lines.push('the entry is removed, not marked Deleted');
  }
  for (const name of ['operator', 'comment']) {
    const value = $(`directory-${name}`).value.trim();
    if (value) body[name] = value;
  }
  lines.push(body.activate
    ? 'written as a pending map and activated at once'
    : 'written as a pending map that waits for an activation');
  return { operation, body, lines };
}

function showResult(result) {
  const issues = (result.issues || []).map((issue) => `${issue.code}: ${issue.message}`);
  const kind = result.succeeded ? 'ok' : 'error';
  replace($('directory-result-out'), el('div', { id: 'directory-result', 'data-status': result.status },
    message(kind, `${result.status}: ${result.message}`),
    result.pendingMapVersion ? message('info', `map version ${result.pendingMapVersion}, ` +
      (result.requiresActivation ? 'pending activation' : 'activated')) : null,
    issues.length ? el('ul', { class: 'changes' }, issues.map((line) => el('li', { text: line }))) : null));
}

async function change(directory, context) {
  const { operation, body, lines } = describe(directory, context);
  const confirmed = await confirmAction({ title: `Change shard directory ${directory}?`, lines, confirmLabel: operation });
  if (!confirmed) {
    replace($('directory-result-out'), message('info', 'nothing was changed', { id: 'directory-cancelled' }));
    return;
  }
  try {
    showResult(await post(`/api/sharding/directory/${operation}`, body));
  } catch (error) {
    // A refused change is a 400 whose `mutation` is the result, with the issues that say why.
    if (error instanceof ApiError && error.problem && error.problem.mutation) showResult(error.problem.mutation);
    else replace($('directory-result-out'), message('error', error.message, { id: 'directory-result-error' }));
    return;
  }
  await context.refreshMap();
  await view.show($('view-directories'), context);
}

function changeForm(context) {
  const operation = el('select', { id: 'directory-operation' }, OPERATIONS.map((op) => el('option', { value: op, text: op })));
  return el('form', {
    class: 'inline', id: 'directory-change-form',
    onsubmit: (event) => {
      event.preventDefault();
      change($('directory-select').value, context);
    },
  },
  field('Change', operation),
  field('Lookup key', el('input', { id: 'directory-key', required: true })),
  field('Route key (reserve, upsert)', el('input', { id: 'directory-route-key' })),
  field('State (upsert)', el('select', { id: 'directory-state' }, STATES.map((s) => el('option', { value: s, text: s })))),
  el('label', { class: 'check' }, el('input', { type: 'checkbox', id: 'directory-remove' }), 'remove (delete)'),
  el('label', { class: 'check' }, el('input', { type: 'checkbox', id: 'directory-activate', checked: true }), 'activate'),
  field('Operator', el('input', { id: 'directory-operator' })),
  field('Comment', el('input', { id: 'directory-comment' })),
  el('button', { type: 'submit', id: 'directory-submit', class: 'danger', text: 'Change…' }));
}

export const view = {
  mount(section, context) {
    const select = el('select', { id: 'directory-select', onchange: () => restartPaging(select.value) });
    replace(section,
      el('h2', { text: 'Shard directories' }),
      el('p', { class: 'hint', text: 'A directory maps a lookup key (an order number) to a route and its shard: ' +
        'the same answers as "shardlite directory".' }),
      el('div', { class: 'inline' }, field('Directory', select),
        field('Page size', el('input', { id: 'directory-limit', type: 'number', min: 1, max: 1000, value: 50 }))),
      el('p', { id: 'directory-none', hidden: true, class: 'hint', text: 'The live map has no shard directories.' }),
      el('h3', { text: 'Entries' }),
      el('div', { class: 'pager' },
        el('button', { type: 'button', id: 'directory-prev', text: '← previous', onclick: () => {
          paging.afters.pop();
          showEntries(select.value);
        } }),
        el('button', { type: 'button', id: 'directory-next', text: 'next →', onclick: () => {
          if (!paging.next) return;
          paging.afters.push(paging.next);
          showEntries(select.value);
        } })),
      el('div', { id: 'directory-entries-out' }),
      el('h3', { text: 'Resolve a lookup key' }),
      el('form', { class: 'inline', id: 'directory-resolve-form', onsubmit: (event) => {
        event.preventDefault();
        resolve(select.value);
      } },
      field('Lookup key', el('input', { id: 'directory-lookup', required: true })),
      el('label', { class: 'check' }, el('input', { type: 'checkbox', id: 'directory-inactive' }), 'include inactive'),
      el('button', { type: 'submit', id: 'directory-resolve', text: 'Resolve' })),
      el('div', { id: 'directory-resolution-out' }),
      el('h3', { text: 'Change an entry' }),
      changeForm(context),
      el('div', { id: 'directory-result-out' }));
  },
  async show(section, context) {
    const directories = (context.map && context.map.directories) || [];
    const select = $('directory-select');
    const chosen = select.value;
    replace(select, directories.map((d) => el('option', {
      value: d.directoryName,
      text: `${d.directoryName} (${d.entryCount} ${d.entryCount === 1 ? 'entry' : 'entries'}${d.readOnly ? ', read-only' : ''})`,
    })));
    $('directory-none').hidden = directories.length > 0;
    if (!directories.length) return;
    if (directories.some((d) => d.directoryName === chosen)) select.value = chosen;
    section.dataset.state = 'ready';
    await restartPaging(select.value);
  },
};
