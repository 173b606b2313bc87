// Shards (definitions and probed health, a page at a time) and the bucket space (one bar
// coloured by owner, in slices on large maps, over a strip coloured by heat).

import { get, post } from './api.js';
import { el, field, message, replace, table } from './dom.js';

const PALETTE_SIZE = 8;
/** Shard rows per page of the shard table. */
export const SHARD_PAGE = 100;
/** The most segments the bucket bar draws; larger maps show slices of the bucket space. */
export const MAX_SEGMENTS = 256;
/** The most cells the heat strip draws; larger maps show slices of the bucket space. */
export const MAX_HEAT_CELLS = 256;
/** The most shards the legend names. */
const LEGEND_SIZE = 32;
/** The most pins the bucket view resolves, marks and lists. */
const PIN_SAMPLE = 200;

/** What the views look up per shard, computed once per map: a map may have 10,000 shards. */
const indexes = new WeakMap();
function indexOf(map) {
  let index = indexes.get(map);
  if (!index) {
    const position = new Map();
    map.shards.forEach((shard, at) => position.set(shard.shardId.toLowerCase(), at));
    const buckets = new Map();
    for (const range of map.bucketRanges) {
      const id = range.shardId.toLowerCase();
      buckets.set(id, (buckets.get(id) || 0) + range.endBucketExclusive - range.startBucketInclusive);
    }
    const pins = new Map();
    for (const owner of Object.values(map.exactKeyPins)) {
      const id = owner.toLowerCase();
      pins.set(id, (pins.get(id) || 0) + 1);
    }
    const ranges = [...map.bucketRanges].sort((a, b) => a.startBucketInclusive - b.startBucketInclusive);
    index = { position, buckets, pins, ranges };
    indexes.set(map, index);
  }
  return index;
}

/** The colour class of a shard: its position in the map's definition order. */
export function ownerClass(map, shardId) {
  const at = indexOf(map).position.get(shardId.toLowerCase());
  return `owner-${(at === undefined ? 0 : at) % PALETTE_SIZE}`;
}

/** The range of the map that holds `bucket` (a binary search over the ranges by start). */
export function rangeOf(map, bucket) {
  const ranges = indexOf(map).ranges;
  let low = 0;
  let high = ranges.length - 1;
  while (low <= high) {
    const middle = (low + high) >> 1;
    const range = ranges[middle];
    if (bucket < range.startBucketInclusive) high = middle - 1;
    else if (bucket >= range.endBucketExclusive) low = middle + 1;
    else return range;
  }
  return undefined;
}

function bucketsOwned(map, shardId) {
  return indexOf(map).buckets.get(shardId.toLowerCase()) || 0;
}

function pinsOf(map, shardId) {
  return indexOf(map).pins.get(shardId.toLowerCase()) || 0;
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
  offset: 0,
  mount(section) {
    const unhealthy = el('input', { type: 'checkbox', id: 'shards-unhealthy',
      onchange: () => { this.offset = 0; this.show(section, this.context); } });
    replace(section,
      el('h2', { text: 'Shards' }),
      el('p', { class: 'hint', text: `The shards of the active map, in definition order, ${SHARD_PAGE} at a time, with a live health probe. Secrets are never shown.` }),
      el('div', { class: 'inline' },
        el('button', { type: 'button', id: 'shards-refresh', text: 'Probe again', onclick: () => this.show(section, this.context) }),
        el('label', { class: 'check' }, unhealthy, el('span', { text: 'Only problem shards' }))),
      el('p', { id: 'shards-summary' }),
      el('div', { id: 'shards-body' }),
      el('div', { class: 'pager' },
        el('button', { type: 'button', id: 'shards-prev', text: 'Previous',
          onclick: () => { this.offset = Math.max(0, this.offset - SHARD_PAGE); this.show(section, this.context); } }),
        el('span', { id: 'shards-range' }),
        el('button', { type: 'button', id: 'shards-next', text: 'Next',
          onclick: () => { this.offset += SHARD_PAGE; this.show(section, this.context); } })));
  },
  async show(section, context) {
    this.context = context;
    const body = section.querySelector('#shards-body');
    section.dataset.state = 'loading';
    const unhealthyOnly = section.querySelector('#shards-unhealthy').checked;
    const query = new URLSearchParams({ offset: String(this.offset), limit: String(SHARD_PAGE) });
    if (unhealthyOnly) query.set('unhealthyOnly', 'true');
    const [map, page] = await Promise.all([context.refreshMap(), get(`/api/sharding/status/page?${query}`)]);
    if (page.shards.length === 0 && page.total > 0 && this.offset > 0) {
      // Past the end (the list shrank): show the last page.
      this.offset = Math.floor((page.total - 1) / SHARD_PAGE) * SHARD_PAGE;
      return this.show(section, context);
    }
    const byId = new Map(map.shards.map((shard) => [shard.shardId, shard]));
    const rows = page.shards.map((status) => {
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
    const counts = page.summary;
    section.querySelector('#shards-summary').textContent =
      `${counts.shards} shard(s): ${counts.enabled} enabled (${counts.healthy} healthy, ${counts.unavailable} unavailable), ${counts.disabled} disabled`;
    replace(body, rows.length
      ? table(['shard', 'role', 'enabled', 'health', 'target', 'replica', 'buckets', 'pins'], rows, { id: 'shards-table' })
      : message('info', unhealthyOnly ? 'No problem shards.' : 'No shards.'));
    const last = page.offset + page.shards.length;
    section.querySelector('#shards-range').textContent = page.total === 0 ? '' : `shards ${page.offset + 1} to ${last} of ${page.total}`;
    section.querySelector('#shards-prev').disabled = page.offset === 0;
    section.querySelector('#shards-next').disabled = last >= page.total;
    section.dataset.state = 'ready';
    return undefined;
  },
};

/**
 * The bar's segments: one per range, or, past MAX_SEGMENTS ranges, one per equal slice of the
 * bucket space, owned by one shard or marked as mixed.
 */
function segmentsOf(map) {
  const ranges = indexOf(map).ranges;
  if (ranges.length <= MAX_SEGMENTS) {
    return ranges.map((range) => ({ start: range.startBucketInclusive, end: range.endBucketExclusive, shardId: range.shardId }));
  }
  const count = map.virtualBucketCount;
  const segments = [];
  let at = 0;
  for (let slice = 0; slice < MAX_SEGMENTS; slice += 1) {
    const start = Math.floor((slice * count) / MAX_SEGMENTS);
    const end = Math.floor(((slice + 1) * count) / MAX_SEGMENTS);
    if (end <= start) continue;
    while (at < ranges.length && ranges[at].endBucketExclusive <= start) at += 1;
    const owners = new Set();
    for (let next = at; next < ranges.length && ranges[next].startBucketInclusive < end; next += 1) {
      owners.add(ranges[next].shardId);
    }
    segments.push({ start, end, shardId: owners.size === 1 ? [...owners][0] : null, owners: owners.size });
  }
  return segments;
}

/** Where each pinned key hashes to, so the bar can mark it. */
async function pinBuckets(map) {
  const entries = Object.entries(map.exactKeyPins).slice(0, PIN_SAMPLE);
  return Promise.all(entries.map(async ([key, shardId]) => {
    try {
      const resolved = await post('/api/sharding/resolve', { keyspace: map.keyspace, key });
      return { key, shardId, bucket: resolved.bucket };
    } catch {
      return { key, shardId, bucket: null };
    }
  }));
}

/**
 * The heat strip's cells: equal slices of the bucket space (one bucket each on small maps), each
 * with the requests of its buckets in the heat report.
 */
function heatCells(count, heat) {
  const cells = Math.min(count, MAX_HEAT_CELLS);
  const slices = [];
  for (let i = 0; i < cells; i += 1) {
    slices.push({ start: Math.floor((i * count) / cells), end: Math.floor(((i + 1) * count) / cells), requests: 0 });
  }
  for (const { bucket, requests } of heat.buckets) {
    let at = Math.min(cells - 1, Math.floor((bucket * cells) / count));
    while (at > 0 && slices[at].start > bucket) at -= 1;
    while (at < cells - 1 && slices[at].end <= bucket) at += 1;
    slices[at].requests += requests;
  }
  return slices;
}

/** The strip under the bar: darker red is busier, by requests lately. */
function heatStrip(count, heat) {
  const strip = el('div', { id: 'bucket-heat', class: 'heat-strip', role: 'img', 'aria-label': `${count} buckets by heat` });
  const cells = heatCells(count, heat);
  const hottest = Math.max(0, ...cells.map((cell) => cell.requests));
  for (const { start, end, requests } of cells) {
    const cell = el('span', {
      class: 'heat-cell',
      title: `buckets [${start}, ${end}): ${requests.toFixed(1)} requests lately`,
      'data-start': start,
      'data-end': end,
      'data-heat': requests.toFixed(3),
    });
    cell.style.flexGrow = String(end - start);
    // The square root keeps a warm bucket visible next to a very hot one.
    const intensity = hottest > 0 ? Math.sqrt(requests / hottest) : 0;
    cell.style.backgroundColor = `rgba(197, 48, 48, ${intensity.toFixed(3)})`;
    strip.append(cell);
  }
  return strip;
}

/** One line on where the load is: the hottest shard, its share, and the half-life. */
function heatSummary(heat) {
  if (!heat) return message('info', 'Heat is not available from this daemon.', { id: 'heat-summary' });
  const hottest = heat.shards.find((shard) => shard.requests > 0);
  if (!hottest) return message('info', `No routed calls lately (counts halve every ${heat.halfLifeSeconds} s).`, { id: 'heat-summary' });
  return message('info',
    `Heat (requests lately, halving every ${heat.halfLifeSeconds} s): ${hottest.shardId} takes ` +
    `${(hottest.share * 100).toFixed(1)}% of them; shardlite stats suggest proposes a map that evens the load.`,
    { id: 'heat-summary' });
}

export const bucketsView = {
  mount(section) {
    const input = el('input', { type: 'number', id: 'bucket-number', min: 0, value: 0 });
    replace(section,
      el('h2', { text: 'Bucket space' }),
      el('p', { class: 'hint', text: 'All virtual buckets, left to right, coloured by owner; the strip below is their heat (darker red is busier lately). Pins are marked above the bar. Hover or select a bucket to see its owner and range.' }),
      el('div', { id: 'bucket-bar-wrap', class: 'bar-wrap' }),
      el('div', { id: 'heat-summary-wrap' }),
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
    for (const { start, end, shardId, owners } of segmentsOf(map)) {
      const segment = el('button', {
        type: 'button',
        class: shardId === null ? 'segment mixed' : `segment ${ownerClass(map, shardId)}`,
        title: shardId === null ? `buckets [${start}, ${end}) → ${owners} shards` : `buckets [${start}, ${end}) → ${shardId}`,
        'data-start': start,
        'data-end': end,
        'data-shard': shardId === null ? '' : shardId,
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
    let heat = null;
    try {
      heat = await get('/api/sharding/stats/heat');
    } catch {
      heat = null;
    }
    replace(wrap, markers, bar, heat ? heatStrip(count, heat) : null,
      el('div', { class: 'scale' }, el('span', { text: '0' }), el('span', { text: String(count - 1) })));
    replace(section.querySelector('#heat-summary-wrap'), heatSummary(heat));
    const primaries = map.shards.filter((shard) => shard.role === 'Primary');
    const legend = primaries.slice(0, LEGEND_SIZE).map((shard) =>
      el('span', { class: `swatch ${ownerClass(map, shard.shardId)}`, text: `${shard.shardId} (${bucketsOwned(map, shard.shardId)})` }));
    if (primaries.length > LEGEND_SIZE) {
      legend.push(el('span', { id: 'legend-more', text: `and ${primaries.length - LEGEND_SIZE} more shards (the Shards view lists them)` }));
    }
    replace(section.querySelector('#bucket-legend'), legend);
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
    const pinCount = Object.keys(map.exactKeyPins).length;
    replace(section.querySelector('#pins-body'),
      pinCount > pinRows.length ? message('info', `The first ${pinRows.length} of ${pinCount} pins.`, { id: 'pins-sampled' }) : null,
      pinRows.length
        ? table(['key', 'pinned to', 'bucket', 'bucket owner'], pinRows, { id: 'pins-table' })
        : message('info', 'No keys are pinned.'));
    section.dataset.state = 'ready';
  },
};
