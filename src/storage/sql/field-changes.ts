import type { FieldChanges } from '../store.js';
import type { Dialect } from './dialect.js';

/** The SET items and parameters of a metadata/configuration update (none: nothing to change). */
export function fieldChanges(d: Dialect, changes: FieldChanges): { sets: string[]; params: unknown[] } {
  const sets: string[] = [];
  const params: unknown[] = [];
  if (changes.metadata !== undefined) {
    sets.push('metadata = ?');
    params.push(d.json(changes.metadata));
  }
  if (changes.configuration !== undefined) {
    sets.push('configuration = ?');
    params.push(d.json(changes.configuration));
  }
  return { sets, params };
}
