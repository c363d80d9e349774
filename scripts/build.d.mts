/** Builds the server (src without its tests, types stripped, migrations copied) into `out`, emptied first. */
export function buildServer(out: string): Promise<void>;
/** Builds the inspector page (web/inspector) into `out`, emptied first; the size of each file it wrote, by path below `out`. */
export function buildInspector(out: string): Promise<Record<string, number>>;
