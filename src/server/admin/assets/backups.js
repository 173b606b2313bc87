// Backups: the complete backup sets in the daemon's backup place (newest first), whether every
// file each names is there, a button to take a set now, and the point-in-time archive's lag on
// each shard being written.

import { get, post } from './api.js';
import { el, message, replace, table } from './dom.js';

/** A byte count as an operator reads it. */
function size(bytes) {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1048576) return `${(bytes / 1024).toFixed(1)} KiB`;
  if (bytes < 1073741824) return `${(bytes / 1048576).toFixed(1)} MiB`;
  return `${(bytes / 1073741824).toFixed(2)} GiB`;
}

function badge(ok, text) {
  return el('span', { class: `badge ${ok ? 'ok' : 'bad'}`, text });
}

function setsPart(overview) {
  if (!overview.backupPlace) {
    return message('info', 'This daemon takes no backup sets: start it with serve --backup-dir DIR.', { id: 'backups-no-place' });
  }
  if (overview.sets.length === 0) {
    return message('info', 'No backup set yet.', { id: 'backups-none' });
  }
  const rows = [...overview.sets].reverse().map((set) => [
    set.id, String(set.mapVersion), set.takenAt, `${set.shards} (${set.copied} copied)`,
    `${size(set.bytes)} (${size(set.copiedBytes)} copied)`,
    set.complete ? badge(true, 'complete') : badge(false, `missing: ${set.missing.join(', ')}`),
  ]);
  return table(['set', 'map version', 'taken at', 'shards', 'bytes', 'complete'], rows, { id: 'backups-table', class: 'rows' });
}

function archivePart(overview) {
  if (!overview.archiving) {
    return message('info', 'No point-in-time archive: start the daemon with serve --archive-dir DIR.', { id: 'archive-off' });
  }
  if (overview.archiveLag.length === 0) {
    return message('ok', 'No shard is being written: the archive holds every transaction.', { id: 'archive-idle' });
  }
  const rows = overview.archiveLag.map((entry) => [entry.shard, `${entry.lagSeconds.toFixed(3)} s`]);
  return table(['shard', 'lag'], rows, { id: 'archive-table', class: 'rows' });
}

export const view = {
  mount(section) {
    this.out = el('div', { id: 'backups-result' });
    const take = async () => {
      replace(this.out, message('info', 'taking a backup set…'));
      try {
        const manifest = await post('/api/sharding/backups');
        await this.show();
        this.out.prepend(message('ok', `Set ${manifest.id} taken at map version ${manifest.mapVersion}.`, { id: 'backups-taken' }));
      } catch (error) {
        replace(this.out, message('error', error.message, { id: 'backups-error' }));
      }
    };
    replace(section,
      el('h2', { text: 'Backups' }),
      el('p', { class: 'hint', text: 'Backup sets in the daemon\u2019s backup place, newest first: each holds every shard and the catalog at one map version, as of one cut. A shard unchanged since the set before is referenced, not copied. Complete means every file the set names is there at its size; shardlite backup verify also reads every checksum.' }),
      el('div', { class: 'buttons' },
        el('button', { type: 'button', id: 'backups-refresh', onclick: () => this.show(), text: 'Refresh' }),
        el('button', { type: 'button', id: 'backups-take', onclick: take, text: 'Take a set now' })),
      this.out);
  },
  async show() {
    try {
      const overview = await get('/api/sharding/backups/overview');
      replace(this.out,
        el('h3', { text: 'Sets' }), setsPart(overview),
        el('h3', { text: 'Point-in-time archive' }),
        el('p', { class: 'hint', text: 'How long the oldest transaction of each shard being written has waited for the archive; a shard quiet for 2 s is not listed.' }),
        archivePart(overview));
    } catch (error) {
      replace(this.out, message('error', error.message, { id: 'backups-error' }));
    }
  },
};
