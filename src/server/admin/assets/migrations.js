// Migrations: history, live progress of a running migration (polled), receipts per table and
// collection, and the operator actions (dry run, start, resume), each confirmed. A daemon
// without the migration endpoints says so instead.

import { ApiError, get, post } from './api.js';
import { confirmAction, el, field, message, replace, table } from './dom.js';

const BASE = '/api/sharding/migrations';
const POLL_MS = 1000;
const DEFAULT_MANIFEST = { pageSize: 500, tables: [{ tableName: 'orders', routeKeyColumn: 'order_month', primaryKeyColumn: 'id' }], collections: [] };

function describe(spec) {
  if (!spec) return '';
  const what = spec.kind === 'BucketRange'
    ? `buckets [${spec.startBucketInclusive}, ${spec.endBucketExclusive})`
    : `key ${spec.routeKey}`;
  return `${what}: ${spec.sourceShardId} → ${spec.destinationShardId}`;
}

/** A checksum, shortened for the table; the whole of it is in the tooltip. */
function checksum(hex) {
  return hex ? el('span', { class: 'checksum', title: hex, text: hex.length > 16 ? `${hex.slice(0, 16)}…` : hex }) : '';
}

function receiptsTable(receipts) {
  return table(['table / collection', 'pages', 'source rows', 'destination rows', 'source checksum', 'destination checksum', 'verified', 'source rows deleted', 'error'],
    receipts.map((r) => [`${r.name}${r.collection ? ' (collection)' : ''}`, r.pagesCopied, r.sourceRows, r.destinationRows ?? '',
      checksum(r.sourceChecksum), checksum(r.destinationChecksum), r.verified ? 'yes' : 'no', r.sourceRowsDeleted, r.error || '']),
    { id: 'migration-receipts' });
}

function planView(plan) {
  return el('div', { id: 'migration-plan' },
    message('info', `plan: the new map would be version ${plan.proposedMapVersion}`),
    table(['table / collection', 'estimated rows', 'route index', 'query plan'],
      plan.items.map((item) => [`${item.name}${item.collection ? ' (collection)' : ''}`, item.estimatedRows, item.routeIndex ? 'yes' : 'no (every page scans)', item.queryPlan])),
    el('ul', { class: 'changes' },
      plan.movedBuckets.map(([s, e, from, to]) => el('li', { text: `buckets [${s}, ${e}) move from ${from} to ${to}` })),
      plan.movedPins.map(([key, from, to]) => el('li', { text: `pin ${key} moves from ${from} to ${to}` }))));
}

function resultView(result) {
  return el('div', { id: 'migration-detail', 'data-status': result.status, 'data-id': result.migrationId },
    table(['id', 'status', 'phase', 'what', 'attempt', 'started', 'updated', 'completed'],
      [[result.migrationId, result.status, result.phase, describe(result.spec), result.attempt, result.startedUtc, result.updatedUtc, result.completedUtc || '']]),
    message(result.requiresOperatorRecovery ? 'error' : 'info', result.message),
    result.online ? message('info', `online: ${result.online.changesApplied} captured change(s) replayed in ${result.online.catchUpRounds} catch-up round(s), ${result.online.remainingChanges} remaining; cutover ${result.online.cutoverMs == null ? 'not yet' : `${result.online.cutoverMs} ms`}`) : null,
    result.recoveryAction ? message('error', `recovery: ${result.recoveryAction}`) : null,
    result.issues && result.issues.length ? table(['severity', 'code', 'message'], result.issues.map((i) => [i.severity, i.code, i.message])) : null,
    result.plan ? planView(result.plan) : null,
    result.receipts && result.receipts.length ? receiptsTable(result.receipts) : null);
}

/** A migration id of the page's own, so it can follow the migration while it runs. */
function newMigrationId() {
  const stamp = new Date().toISOString().replace(/[^0-9]/g, '').slice(0, 14);
  const random = Array.from(crypto.getRandomValues(new Uint8Array(6)), (b) => b.toString(16).padStart(2, '0')).join('');
  return `admin-${stamp}-${random}`;
}

export const view = {
  inFlight: new Set(),
  mount(section, context) {
    this.context = context;
    const input = (id, attributes = {}) => el('input', { id, ...attributes });
    this.kind = el('select', { id: 'migration-kind' },
      el('option', { value: 'exact-route-key', text: 'one route key' }),
      el('option', { value: 'bucket-range', text: 'a bucket range' }));
    this.key = input('migration-key', { placeholder: 'route key' });
    this.source = input('migration-source', { placeholder: 'source shard (bucket range)' });
    this.start = input('migration-start', { type: 'number', min: 0, placeholder: 'start' });
    this.end = input('migration-end', { type: 'number', min: 1, placeholder: 'end (exclusive)' });
    this.destination = input('migration-destination', { placeholder: 'destination shard' });
    this.manifest = el('textarea', { id: 'migration-manifest', rows: 6, spellcheck: 'false', text: JSON.stringify(DEFAULT_MANIFEST, null, 2) });
    this.activateBox = input('migration-activate', { type: 'checkbox' });
    this.deleteBox = input('migration-delete-source', { type: 'checkbox' });
    this.operator = input('migration-operator', { placeholder: 'who' });
    this.comment = input('migration-comment', { placeholder: 'why' });
    this.out = el('div', { id: 'migration-action-result' });
    replace(section,
      el('h2', { text: 'Migrations' }),
      el('div', { id: 'migrations-availability' }),
      el('div', { id: 'migrations-body' },
        el('h3', { text: 'Migrations (latest state of each)' }),
        el('div', { id: 'migrations-history' }),
        el('h3', { text: 'Selected migration' }),
        el('div', { id: 'migration-selected' }, message('info', 'Select a migration in the history to see its progress and receipts.')),
        el('h3', { text: 'Move data' }),
        el('div', { class: 'inline' }, field('Move', this.kind), field('Key', this.key), field('Source', this.source),
          field('Start bucket', this.start), field('End bucket', this.end), field('Destination', this.destination)),
        field('Manifest (tables and collections to move)', this.manifest),
        el('div', { class: 'inline' },
          el('label', { class: 'check' }, this.activateBox, ' activate the new map when verified'),
          el('label', { class: 'check' }, this.deleteBox, ' delete the source rows after activation'),
          field('Operator', this.operator), field('Comment', this.comment)),
        el('div', { class: 'buttons' },
          el('button', { type: 'button', id: 'migration-dry-run', onclick: () => this.dryRun(), text: 'Dry run' }),
          el('button', { type: 'button', id: 'migration-start-button', onclick: () => this.startMigration(), text: 'Start…' })),
        this.out));
  },

  request(dryRun) {
    let manifest;
    try {
      manifest = JSON.parse(this.manifest.value);
    } catch (error) {
      throw new ApiError(400, { errorCode: 'invalid_input', detail: `the manifest is not valid JSON: ${error.message}` });
    }
    const body = { keyspace: this.context.map.keyspace, destinationShardId: this.destination.value.trim(), manifest, dryRun,
      activate: this.activateBox.checked, deleteSource: this.deleteBox.checked, expectedCurrentMapVersion: this.context.map.mapVersion };
    if (this.operator.value.trim()) body.operator = this.operator.value.trim();
    if (this.comment.value.trim()) body.comment = this.comment.value.trim();
    if (this.kind.value === 'bucket-range') {
      Object.assign(body, { sourceShardId: this.source.value.trim(), startBucketInclusive: Number(this.start.value), endBucketExclusive: Number(this.end.value) });
    } else {
      body.routeKey = this.key.value.trim();
    }
    return body;
  },

  async dryRun() {
    try {
      const result = await post(`${BASE}/${this.kind.value}`, this.request(true));
      replace(this.out, resultView(result));
      return result;
    } catch (error) {
      // A rejected request answers 400 with the result, whose issues say what to change.
      const rejected = error.problem && error.problem.migration;
      replace(this.out, rejected ? resultView(rejected) : message('error', error.message));
      return null;
    }
  },

  async startMigration() {
    const planned = await this.dryRun();
    if (!planned || !planned.plan) return;
    const body = this.request(false);
    const lines = [describe(planned.spec), ...planned.plan.items.map((item) => `${item.name}: about ${item.estimatedRows} row(s)`),
      ...planned.plan.movedBuckets.map(([s, e, from, to]) => `buckets [${s}, ${e}) move from ${from} to ${to}`),
      ...planned.plan.movedPins.map(([key, from, to]) => `pin ${key} moves from ${from} to ${to}`),
      `writes to the moving keys go on during the copy and are refused only for the short cutover; the new map (version ${planned.plan.proposedMapVersion}) is ${body.activate ? 'activated' : 'left pending'}`];
    if (!await confirmAction({ title: 'Start this migration?', lines, confirmLabel: 'Start' })) return;
    // The daemon answers when the migration ends; with an id of our own, its progress is polled
    // meanwhile.
    body.migrationId = newMigrationId();
    await this.follow(body.migrationId, post(`${BASE}/${this.kind.value}`, body));
  },

  /** Shows `id`'s progress, polled, until `request` (which runs it) answers. */
  async follow(id, request) {
    this.inFlight.add(id);
    replace(this.out, message('info', `migration ${id} is running…`));
    this.select(id);
    try {
      const result = await request;
      replace(this.out, message(result.requiresOperatorRecovery ? 'error' : 'ok', `${result.migrationId}: ${result.status}`));
    } catch (error) {
      replace(this.out, message('error', error.message));
    } finally {
      this.inFlight.delete(id);
    }
    await this.select(id);
    await this.loadHistory();
  },

  async resume(id) {
    if (!await confirmAction({ title: `Resume migration ${id}?`, confirmLabel: 'Resume',
      lines: ['continues from its last checkpoint without copying finished pages again, then verifies everything',
        this.activateBox.checked ? 'activates the new map when verified' : 'leaves the new map pending unless the migration was started with activation'] })) return;
    await this.follow(id, post(`${BASE}/${encodeURIComponent(id)}/resume`, { activate: this.activateBox.checked, deleteSource: this.deleteBox.checked }));
  },

  async select(id) {
    clearTimeout(this.timer);
    this.selected = id;
    const box = document.getElementById('migration-selected');
    const running = this.inFlight.has(id);
    let again = running;
    try {
      const result = await get(`${BASE}/${encodeURIComponent(id)}`);
      const resumable = !running && (result.status === 'Running' || result.requiresOperatorRecovery || result.status === 'PendingActivation');
      replace(box, resultView(result),
        resumable ? el('button', { type: 'button', id: 'migration-resume', onclick: () => this.resume(id), text: 'Resume…' }) : null);
      again = again || result.status === 'Running';
    } catch (error) {
      // A migration that has only just been asked for may not be recorded yet.
      replace(box, running && error instanceof ApiError && error.status === 404
        ? message('info', `migration ${id} is starting…`)
        : message('error', error.message));
    }
    if (again && this.visible && this.selected === id) this.timer = setTimeout(() => this.select(id), POLL_MS);
  },

  async loadHistory() {
    const history = await get(BASE);
    const entries = Array.isArray(history) ? history : (history.history || history.migrations || []);
    replace(document.getElementById('migrations-history'), entries.length
      ? table(['id', 'status', 'what', 'updated', ''], entries.map((m) => [m.migrationId, m.status, describe(m.spec), m.updatedUtc,
        el('button', { type: 'button', 'data-migration': m.migrationId, onclick: () => this.select(m.migrationId), text: 'Show' })]), { id: 'migrations-table' })
      : message('info', 'No migrations yet.'));
  },

  hide() {
    this.visible = false;
    clearTimeout(this.timer);
  },

  async show(section) {
    this.visible = true;
    section.dataset.state = 'loading';
    const availability = section.querySelector('#migrations-availability');
    const body = section.querySelector('#migrations-body');
    try {
      await this.loadHistory();
      body.hidden = false;
      replace(availability);
      if (this.selected) await this.select(this.selected);
    } catch (error) {
      if (!(error instanceof ApiError) || error.status !== 404) throw error;
      body.hidden = true;
      replace(availability, message('info', error.noEndpoint
        ? 'Migrations are not available on this daemon: it has no migration endpoints. Upgrade the daemon to move data between shards from here.'
        : `Migrations are not available: ${error.message}`, { id: 'migrations-unavailable' }));
    }
    section.dataset.state = 'ready';
  },
};

