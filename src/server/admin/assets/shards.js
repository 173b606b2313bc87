// Shards (definitions and probed health) and the bucket space (one bar coloured by owner).

import { get, post } from './api.js';
import { el, field, message, replace, table } from './dom.js';

const PALETTE_SIZE = 8;

/** The colour class of a shard: its position in the map's definition order. */
export function ownerClass(map, shardId) {
  const index = map.shards.findIndex((shard) => shard.shardId.toLowerCase() === shardId.toLowerCase());
  return `owner-${(index < 0 ? 0 : index) % PALETTE_SIZE}`;
}

/** The range of the map that holds `bucket`. */
export function rangeOf(map, bucket) {
  return map.bucketRanges.find((range) => range.startBucketInclusive <= bucket && bucket < range.endBucketExclusive);
}

function bucketsOwned(map, shardId) {
  return map.bucketRanges
    .filter((range) => range.shardId.toLowerCase() === shardId.toLowerCase())
    .reduce((sum, range) => sum + (range.endBucketExclusive - range.startBucketInclusive), 0);
}

function pinsOf(map, shardId) {
  return Object.entries(map.exactKeyPins).filter(([, owner]) => owner.toLowerCase() === shardId.toLowerCase()).length;
}

function replicaText(status) {
  if (status.role !== 'Replica') return '';
  const parts = [`follows ${status.primaryShardId || '?'}`];
  if (status.replicationLagBytes !== undefined) parts.push(`lag ${status.replicationLagBytes} bytes`);
  if (status.lastReplicatedUtc) parts.push(`last replicated ${status.lastReplicatedUtc}`);
  if (status.promotionEligible) parts.push('promotion eligible');
  return parts.join(', ');
}

export const shardsView = {
  mount(section) {
    replace(section,
      el('h2', { text: 'Shards' }),
      el('p', { class: 'hint', text: 'Every shard of the active map, in definition order, with a live health probe. Secrets are never shown.' }),
      el('button', { type: 'button', id: 'shards-refresh', text: 'Probe again', onclick: () => this.show(section, this.context) }),
      el('div', { id: 'shards-body' }));
  },
  async show(section, context) {
    this.context = context;
    const body = section.querySelector('#shards-body');
    section.dataset.state = 'loading';
    const [map, statuses] = await Promise.all([context.refreshMap(), get('/api/sharding/status')]);
    const byId = new Map(map.shards.map((shard) => [shard.shardId, shard]));
    const rows = statuses.map((status) => {
      const shard = byId.get(status.shardId) || {};
      const health = status.healthy
        ? el('span', { class: 'badge ok', text: 'healthy' })
        : el('span', { class: 'badge bad', text: status.enabled ? `unhealthy: ${status.error || 'no answer'}` : 'disabled' });
      const target = shard.endpoint ? `${shard.transport} ${shard.endpoint}` : (status.dataSource || shard.dataSource || '');
      return [
        el('span', { class: `swatch ${ownerClass(map, status.shardId)}`, text: status.shardId }),
        status.role,
        status.enabled ? 'yes' : 'no',
        health,
        target,
        replicaText(status),
        bucketsOwned(map, status.shardId),
        pinsOf(map, status.shardId),
      ];
    });
    replace(body, table(['shard', 'role', 'enabled', 'health', 'target', 'replica', 'buckets', 'pins'], rows, { id: 'shards-table' }));
    section.dataset.state = 'ready';
  },
};

/** Where each pinned key hashes to, so the bar can mark it. */
async function pinBuckets(map) {
  const entries = Object.entries(map.exactKeyPins).slice(0, 200);
  return Promise.all(entries.map(async ([key, shardId]) => {
    try {
      const resolved = await post('/api/sharding/resolve', { keyspace: map.keyspace, key });
      return { key, shardId, bucket: resolved.bucket };
    } catch {
      return { key, shardId, bucket: null };
    }
  }));
}

export const bucketsView = {
  mount(section) {
    const input = el('input', { type: 'number', id: 'bucket-number', min: 0, value: 0 });
    replace(section,
      el('h2', { text: 'Bucket space' }),
      el('p', { class: 'hint', text: 'All virtual buckets, left to right, coloured by owner. Pins are marked above the bar. Hover or select a bucket to see its owner and range.' }),
      el('div', { id: 'bucket-bar-wrap', class: 'bar-wrap' }),
      el('div', { id: 'bucket-legend', class: 'legend' }),
      el('form', { class: 'inline', id: 'bucket-form', onsubmit: (event) => { event.preventDefault(); this.select(Number(input.value)); } },
        field('Bucket', input), el('button', { type: 'submit', text: 'Show owner' })),
      el('div', { id: 'bucket-selection' }),
      el('h3', { text: 'Pins' }),
      el('div', { id: 'pins-body' }));
  },
  select(bucket) {
    const section = document.getElementById('view-buckets');
    const out = section.querySelector('#bucket-selection');
    const map = this.map;
    if (!Number.isInteger(bucket) || bucket < 0 || bucket >= map.virtualBucketCount) {
      replace(out, message('error', `bucket must be a whole number from 0 to ${map.virtualBucketCount - 1}`));
      return;
    }
    const range = rangeOf(map, bucket);
    const pinned = (this.pins || []).filter((pin) => pin.bucket === bucket);
    replace(out, message('info',
      `bucket ${bucket} is owned by ${range.shardId} (range [${range.startBucketInclusive}, ${range.endBucketExclusive}))` +
      (pinned.length ? `; pinned keys hashing here: ${pinned.map((pin) => `${pin.key} → ${pin.shardId}`).join(', ')}` : ''),
      { id: 'bucket-selected' }));
  },
  async show(section, context) {
    section.dataset.state = 'loading';
    const map = await context.refreshMap();
    this.map = map;
    const count = map.virtualBucketCount;
    const bar = el('div', { id: 'bucket-bar', class: 'bar', role: 'img', 'aria-label': `${count} buckets by owner` });
    for (const range of map.bucketRanges) {
      const start = range.startBucketInclusive;
      const end = range.endBucketExclusive;
      const segment = el('button', {
        type: 'button',
        class: `segment ${ownerClass(map, range.shardId)}`,
        title: `buckets [${start}, ${end}) → ${range.shardId}`,
        'data-start': start,
        'data-end': end,
        'data-shard': range.shardId,
        onclick: (event) => {
          const box = event.currentTarget.getBoundingClientRect();
          const offset = Math.floor(((event.clientX - box.left) / box.width) * (end - start));
          this.select(Math.min(end - 1, start + Math.max(0, offset)));
        },
      });
      segment.style.flexGrow = String(end - start);
      bar.append(segment);
    }
    const markers = el('div', { id: 'pin-markers', class: 'markers' });
    const wrap = section.querySelector('#bucket-bar-wrap');
    replace(wrap, markers, bar, el('div', { class: 'scale' }, el('span', { text: '0' }), el('span', { text: String(count - 1) })));
    replace(section.querySelector('#bucket-legend'), map.shards.filter((shard) => shard.role === 'Primary').map((shard) =>
      el('span', { class: `swatch ${ownerClass(map, shard.shardId)}`, text: `${shard.shardId} (${bucketsOwned(map, shard.shardId)})` })));
    this.pins = await pinBuckets(map);
    for (const pin of this.pins) {
      if (pin.bucket === null) continue;
      const marker = el('span', {
        class: `pin ${ownerClass(map, pin.shardId)}`,
        title: `pin ${pin.key} → ${pin.shardId} (hashes to bucket ${pin.bucket})`,
        'data-key': pin.key,
        'data-bucket': pin.bucket,
        text: '▼',
      });
      marker.style.left = `${((pin.bucket + 0.5) / count) * 100}%`;
      markers.append(marker);
    }
    const pinRows = this.pins.map((pin) => {
      const range = pin.bucket === null ? null : rangeOf(map, pin.bucket);
      const overrides = range && range.shardId.toLowerCase() !== pin.shardId.toLowerCase();
      return [pin.key, el('span', { class: `swatch ${ownerClass(map, pin.shardId)}`, text: pin.shardId }),
        pin.bucket === null ? '?' : pin.bucket,
        range ? `${range.shardId}${overrides ? ' (overridden by the pin)' : ''}` : ''];
    });
    replace(section.querySelector('#pins-body'), pinRows.length
      ? table(['key', 'pinned to', 'bucket', 'bucket owner'], pinRows, { id: 'pins-table' })
      : message('info', 'No keys are pinned.'));
    section.dataset.state = 'ready';
  },
};
