// The workspace shell: the API-key prompt, the view switcher and what the views share.

import { ApiError, apiKey, get } from './api.js';
import { message, replace } from './dom.js';
import * as shards from './shards.js';
import * as catalog from './catalog.js';
import * as migrations from './migrations.js';
import * as directories from './directories.js';
import * as route from './route.js';
import * as diagnostics from './diagnostics.js';
import * as atomic from './atomic.js';
import * as backups from './backups.js';

const views = {
  shards: shards.shardsView,
  buckets: shards.bucketsView,
  catalog: catalog.view,
  migrations: migrations.view,
  directories: directories.view,
  route: route.previewView,
  query: route.tabsView,
  diagnostics: diagnostics.view,
  atomic: atomic.view,
  backups: backups.view,
};

const $ = (id) => document.getElementById(id);

/** What every view shares: the live map, and a way to reload it after a change. */
const context = {
  map: null,
  async refreshMap() {
    context.map = await get('/api/sharding/map');
    replace($('daemon-summary'),
      `keyspace ${context.map.keyspace} · map version ${context.map.mapVersion} · ` +
      `${context.map.shards.length} shard(s) · ${context.map.virtualBucketCount} buckets`);
    $('daemon-summary').dataset.mapVersion = String(context.map.mapVersion);
    return context.map;
  },
  /** Shows `error` in the notice area; a refused key sends the operator back to the prompt. */
  fail(error) {
    if (error instanceof ApiError && error.status === 401) {
      askForKey();
      return;
    }
    notice('error', error.message);
  },
};

let current = null;
const mounted = new Set();

function notice(kind, text) {
  const box = $('notice');
  replace(box, message(kind, text, { id: 'notice-text' }));
  box.hidden = false;
}

function clearNotice() {
  replace($('notice'));
  $('notice').hidden = true;
}

async function show(name) {
  const view = views[name] ? name : 'shards';
  for (const button of document.querySelectorAll('#views button')) {
    button.classList.toggle('active', button.dataset.view === view);
  }
  for (const section of document.querySelectorAll('main .view')) {
    section.hidden = section.id !== `view-${view}`;
  }
  if (current && current !== view && views[current].hide) views[current].hide();
  current = view;
  const section = $(`view-${view}`);
  try {
    if (!mounted.has(view)) {
      mounted.add(view);
      views[view].mount(section, context);
    }
    await views[view].show(section, context);
  } catch (error) {
    context.fail(error);
  }
}

function askForKey(refused) {
  const hadKey = Boolean(apiKey.get());
  apiKey.forget();
  $('views').hidden = true;
  for (const section of document.querySelectorAll('main .view')) section.hidden = true;
  $('forget-key').hidden = true;
  replace($('daemon-summary'));
  const prompt = hadKey || refused
    ? 'The daemon refused that API key. Check the key (it is the one the daemon was started with) and enter it again.'
    : 'This daemon requires an API key. Enter it to continue.';
  replace($('key-prompt'), message(hadKey || refused ? 'error' : 'info', prompt, { id: 'key-message' }));
  $('key-form').hidden = false;
  $('api-key').focus();
}

async function start() {
  clearNotice();
  try {
    await context.refreshMap();
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) {
      askForKey(false);
    } else if (error instanceof ApiError && error.errorCode === 'not_sharded') {
      notice('info', 'This daemon serves one unsharded database: there is no shard map, so the sharding views have nothing to show.');
    } else {
      notice('error', `The workspace could not load the shard map: ${error.message}`);
    }
    return;
  }
  $('key-form').hidden = true;
  $('views').hidden = false;
  $('forget-key').hidden = !apiKey.get();
  await show(location.hash.slice(1) || current || 'shards');
}

$('key-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const key = $('api-key').value;
  $('api-key').value = '';
  apiKey.set(key);
  try {
    await context.refreshMap();
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) {
      askForKey(true);
      return;
    }
  }
  await start();
});

$('forget-key').addEventListener('click', () => {
  apiKey.forget();
  location.reload();
});

$('views').addEventListener('click', (event) => {
  const button = event.target.closest('button[data-view]');
  if (button) {
    history.replaceState(null, '', `#${button.dataset.view}`);
    show(button.dataset.view);
  }
});

start();
