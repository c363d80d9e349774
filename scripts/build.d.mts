/** Builds the server (src without its tests, types stripped, migrations copied) into `out`, emptied first. */
export function buildServer(out: string): Promise<void>;
