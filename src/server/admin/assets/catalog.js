// The catalog: the active map, the pending map with what it changes, the history, and the
// operator actions (validate, apply, activate), each confirmed with what will change.

import { ApiError, get, post } from './api.js';
import { confirmAction, el, field, message, replace, table } from './dom.js';

/** Each bucket's owner, lower-cased. */
function owners(map) {
  const list = new Array(map.virtualBucketCount).fill('');
  for (const range of map.bucketRanges) {
    for (let b = range.startBucketInclusive; b < range.endBucketExclusive; b += 1) list[b] = range.shardId;
  }
  return list;
}

/** What `next` changes against `active`: bucket runs and pins that change owner. */
export function mapDiff(active, next) {
  // A summarised map (a large one) lists what it can: its moves are in the validation.
  if (active.summary || next.summary) return { movedBuckets: [], movedPins: [], summarised: true };
  const movedBuckets = [];
  if (active.virtualBucketCount === next.virtualBucketCount) {
    const before = owners(active);
    const after = owners(next);
    for (let b = 0; b < before.length; b += 1) {
      if (before[b].toLowerCase() === after[b].toLowerCase()) continue;
      const last = movedBuckets[movedBuckets.length - 1];
      if (last && last[1] === b && last[2] === before[b] && last[3] === after[b]) last[1] = b + 1;
      else movedBuckets.push([b, b + 1, before[b], after[b]]);
    }
  }
  const movedPins = [];
  const keys = new Set([...Object.keys(active.exactKeyPins), ...Object.keys(next.exactKeyPins)]);
  for (const key of [...keys].sort()) {
    const from = active.exactKeyPins[key] || '(bucket owner)';
    const to = next.exactKeyPins[key] || '(bucket owner)';
    if (from.toLowerCase() !== to.toLowerCase()) movedPins.push([key, from, to]);
  }
  return { movedBuckets, movedPins };
}

function changeLines({ movedBuckets = [], movedPins = [], shardChanges = [], summarised = false }) {
  const lines = summarised ? ['the map is too large to compare here: validate a change to see what it moves'] : [];
  for (const [start, end, from, to] of movedBuckets) lines.push(`buckets [${start}, ${end}) move from ${from} to ${to}`);
  for (const [key, from, to] of movedPins) lines.push(`pin ${key} moves from ${from} to ${to}`);
  for (const change of shardChanges) lines.push(`shard ${change.shardId} is ${change.change}`);
  if (!lines.length) lines.push('no bucket, pin or shard changes owner');
  return lines;
}

/** A map snapshot as an editable map: the secrets are not in the snapshot and must be re-entered. */
function editableMap(snapshot) {
  // A summarised map cannot be edited whole: the editor holds a patch of it (RFC 7386).
  if (snapshot.summary) return { mapVersion: snapshot.mapVersion + 1, exactKeyPins: {} };
  return {
    keyspace: snapshot.keyspace,
    mapVersion: snapshot.mapVersion + 1,
    virtualBucketCount: snapshot.virtualBucketCount,
    shards: snapshot.shards.map((shard) => {
      const definition = { shardId: shard.shardId };
      if (!shard.enabled) definition.enabled = false;
      if (shard.role !== 'Primary') definition.role = shard.role;
      for (const name of ['primaryShardId', 'replicationLagBytes', 'lastReplicatedUtc']) {
        if (shard[name] !== undefined && shard[name] !== null) definition[name] = shard[name];
      }
      if (shard.promotionEligible) definition.promotionEligible = true;
      if (shard.endpoint) {
        definition.endpoint = shard.endpoint;
        definition.transport = shard.transport;
      } else if (shard.dataSource) {
        definition.dataSource = shard.dataSource;
      }
      if (shard.apiKeyHeaderName) definition.apiKeyHeaderName = shard.apiKeyHeaderName;
      return definition;
    }),
    bucketRanges: snapshot.bucketRanges,
    exactKeyPins: snapshot.exactKeyPins,
  };
}

function mapSummary(map, id) {
  const counted = map.summary;
  if (counted) {
    return el('div', { id, 'data-summarised': 'true' },
      table(['keyspace', 'version', 'buckets', 'shards', 'ranges', 'pins'], [[
        map.keyspace, map.mapVersion, map.virtualBucketCount, String(counted.shardCount),
        String(counted.bucketRangeCount), String(counted.pinCount),
      ]]));
  }
  return el('div', { id },
    table(['keyspace', 'version', 'buckets', 'shards', 'ranges', 'pins'], [[
      map.keyspace, map.mapVersion, map.virtualBucketCount, map.shards.map((s) => s.shardId).join(', '),
      map.bucketRanges.map((r) => `[${r.startBucketInclusive}, ${r.endBucketExclusive}) ${r.shardId}`).join('; '),
      Object.entries(map.exactKeyPins).map(([k, s]) => `${k} → ${s}`).join('; ') || 'none',
    ]]));
}

function validationView(validation) {
  const issues = validation.issues.map((issue) => [issue.severity, issue.code, issue.message]);
  return el('div', { id: 'catalog-validation', 'data-valid': String(validation.valid) },
    message(validation.valid ? 'ok' : 'error', validation.valid
      ? `valid against map version ${validation.currentMapVersion}${validation.requiresDataMigration ? ' (moves data: migrate first, or acknowledge a metadata-only change)' : ''}`
      : 'not valid: nothing was changed'),
    issues.length ? table(['severity', 'code', 'message'], issues) : null,
    el('ul', { class: 'changes' }, changeLines(validation).map((line) => el('li', { text: line }))));
}

export const view = {
  mount(section, context) {
    this.context = context;
    this.editor = el('textarea', { id: 'catalog-map', rows: 16, spellcheck: 'false' });
    this.expected = el('input', { id: 'catalog-expected', type: 'number', min: 1 });
    this.ack = el('input', { id: 'catalog-ack', type: 'checkbox' });
    this.operator = el('input', { id: 'catalog-operator', placeholder: 'who' });
    this.comment = el('input', { id: 'catalog-comment', placeholder: 'why' });
    this.out = el('div', { id: 'catalog-action-result' });
    replace(section,
      el('h2', { text: 'Catalog' }),
      el('div', { id: 'catalog-state' }),
      el('h3', { text: 'Change the map' }),
      el('p', { class: 'hint', text: 'Edit the proposed map (it starts as the active map with the next version). Validate changes nothing; apply writes it as the pending map; activate makes the pending map live without a restart.' }),
      el('div', { id: 'catalog-secrets-note' }),
      this.editor,
      el('div', { class: 'inline' },
        field('Expected current version', this.expected),
        el('label', { class: 'check' }, this.ack, ' acknowledge an ownership change (metadata only)'),
        field('Operator', this.operator), field('Comment', this.comment)),
      el('div', { class: 'buttons' },
        el('button', { type: 'button', id: 'catalog-reset', onclick: () => this.resetEditor(), text: 'Start from the active map' }),
        el('button', { type: 'button', id: 'catalog-validate', onclick: () => this.validate(), text: 'Validate' }),
        el('button', { type: 'button', id: 'catalog-apply', onclick: () => this.apply(), text: 'Apply…' }),
        el('button', { type: 'button', id: 'catalog-activate', onclick: () => this.activate(), text: 'Activate pending…' })),
      this.out);
  },

  resetEditor() {
    const active = this.state.activeMap;
    this.editor.value = JSON.stringify(editableMap(active), null, 2);
    this.expected.value = String(active.mapVersion);
    const secretive = active.shards.filter((shard) => shard.hasApiKey || shard.hasConnectionString).map((shard) => shard.shardId);
    replace(document.getElementById('catalog-secrets-note'), secretive.length
      ? message('error', `Shards ${secretive.join(', ')} have a connection string or API key, which the daemon never shows: add them to the map before applying it.`)
      : null);
  },

  request() {
    let map;
    try {
      map = JSON.parse(this.editor.value);
    } catch (error) {
      throw new ApiError(400, { errorCode: 'invalid_input', detail: `the proposed map is not valid JSON: ${error.message}` });
    }
    // A summarised map is changed by a patch (the editor holds one), never replaced by the part shown.
    const summarised = this.state && this.state.activeMap.summary;
    const request = summarised ? { patch: map, allowOwnershipChange: this.ack.checked } : { map, allowOwnershipChange: this.ack.checked };
    if (this.expected.value) request.expectedCurrentMapVersion = Number(this.expected.value);
    if (this.operator.value.trim()) request.operator = this.operator.value.trim();
    if (this.comment.value.trim()) request.comment = this.comment.value.trim();
    return request;
  },

  async validate() {
    try {
      const validation = await post('/api/sharding/catalog/validate', this.request());
      replace(this.out, validationView(validation));
      return validation;
    } catch (error) {
      replace(this.out, message('error', error.message, { id: 'catalog-error' }));
      return null;
    }
  },

  async apply() {
    const validation = await this.validate();
    if (!validation || !validation.valid) return;
    const request = this.request();
    const confirmed = await confirmAction({
      title: `Apply map version ${(request.map || request.patch).mapVersion} as the pending map?`,
      lines: [`expected current version: ${request.expectedCurrentMapVersion ?? 'any'}`, ...changeLines(validation),
        'the active map does not change until the pending map is activated'],
      confirmLabel: 'Apply',
    });
    if (!confirmed) return;
    try {
      const result = await post('/api/sharding/catalog/apply', request);
      replace(this.out, message('ok', `map version ${result.pendingMapVersion} is the pending map`, { id: 'catalog-applied' }));
    } catch (error) {
      replace(this.out, message('error', error.message, { id: 'catalog-error' }), error.problem && error.problem.validation ? validationView(error.problem.validation) : null);
    }
    await this.show(null, this.context);
  },

  async activate() {
    const state = await get('/api/sharding/catalog');
    if (!state.pendingMap) {
      replace(this.out, message('error', 'there is no pending map to activate: apply one first', { id: 'catalog-error' }));
      return;
    }
    const diff = mapDiff(state.activeMap, state.pendingMap);
    const confirmed = await confirmAction({
      title: `Activate map version ${state.pendingMap.mapVersion}?`,
      lines: [`active version ${state.activeMap.mapVersion} → ${state.pendingMap.mapVersion}`, ...changeLines(diff),
        'new requests resolve on the new map at once; open transactions on shards whose ownership changes are drained, then rolled back'],
      confirmLabel: 'Activate',
    });
    if (!confirmed) return;
    try {
      const result = await post('/api/sharding/catalog/activate', { expectedPendingMapVersion: state.pendingMap.mapVersion });
      replace(this.out, message('ok', `map version ${result.activeMapVersion} is active (was ${result.previousMapVersion}); ` +
        `${result.rolledBackTransactions} transaction(s) rolled back`, { id: 'catalog-activated' }));
    } catch (error) {
      replace(this.out, message('error', error.message, { id: 'catalog-error' }));
    }
    await this.context.refreshMap();
    await this.show(null, this.context);
  },

  async show(_section, context) {
    const section = document.getElementById('view-catalog');
    section.dataset.state = 'loading';
    const state = await get('/api/sharding/catalog');
    const firstLoad = !this.state;
    this.state = state;
    const pending = state.pendingMap;
    const diff = pending ? mapDiff(state.activeMap, pending) : null;
    replace(section.querySelector('#catalog-state'),
      el('p', { id: 'catalog-active-version', 'data-version': state.activeMap.mapVersion,
        text: `Active map: version ${state.activeMap.mapVersion} (from ${state.source})` }),
      mapSummary(state.activeMap, 'catalog-active'),
      el('h3', { text: 'Pending map' }),
      pending
        ? el('div', { id: 'catalog-pending', 'data-version': pending.mapVersion },
          message('info', `version ${pending.mapVersion} is pending; activating it changes:`),
          el('ul', { class: 'changes' }, changeLines(diff).map((line) => el('li', { text: line }))),
          mapSummary(pending, 'catalog-pending-map'))
        : message('info', 'No pending map.', { id: 'catalog-no-pending' }),
      el('h3', { text: 'History' }),
      state.history.length
        ? table(['time (UTC)', 'version', 'operator', 'comment', 'metadata-only ownership change'],
          state.history.map((h) => [h.appliedUtc, h.mapVersion, h.operator || '', h.comment || '', h.metadataOnlyOwnershipChange ? 'yes' : 'no']),
          { id: 'catalog-history' })
        : message('info', 'No history yet.'));
    if (firstLoad || !this.editor.value) this.resetEditor();
    if (context) this.context = context;
    section.dataset.state = 'ready';
  },
};
