/**
 * Summarises a V8 `.cpuprofile` (from `BENCH_CPU_PROF=<dir> npm run bench`) as text: the
 * functions with the most self time and the most inclusive time, so the hot path shows
 * without opening DevTools.
 *
 *   npx tsx bench/profile-summary.ts <file.cpuprofile> [--top N] [--skip-ms N] [--until-ms N] [--match TEXT]
 *
 * --skip-ms ignores the first N ms of the profile (start-up and bulk loading), --until-ms what
 * comes after N ms (so two parts of a long run can be set side by side);
 * --match keeps only samples whose stack contains a frame matching TEXT (e.g. a route's
 * handler) and reports percentages of those.
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

const args = process.argv.slice(2);
const file = args.find((a) => !a.startsWith('--') && !/^\d+$/.test(a));
const option = (name: string) => {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : undefined;
};
if (file === undefined) {
  console.error('usage: tsx bench/profile-summary.ts <file.cpuprofile> [--top N] [--skip-ms N] [--until-ms N] [--match TEXT]');
  process.exit(2);
}
const top = Number(option('--top') ?? 30);
const skipUs = Number(option('--skip-ms') ?? 0) * 1000;
const untilUs = Number(option('--until-ms') ?? Infinity) * 1000;
const match = option('--match');

const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);

const shortUrl = (url: string) =>
  url.replace(/^file:\/\//, '').replace(/.*\/node_modules\//, 'npm:').replace(/.*\/work\/[^/]+\//, '');
const label = (node: ProfileNode) => {
  const { functionName, url, lineNumber } = node.callFrame;
  return `${functionName || '(anonymous)'} ${url ? `${shortUrl(url)}:${lineNumber + 1}` : ''}`.trim();
};

const selfUs = new Map<string, number>();
const totalUs = new Map<string, number>();
let keptUs = 0;
let idleUs = 0;
let clock = 0;
for (let i = 0; i < profile.samples.length; i++) {
  clock += profile.timeDeltas[i];
  // a sample's cost is the time until the next sample
  const cost = profile.timeDeltas[i + 1] ?? 0;
  if (clock < skipUs || clock > untilUs || cost <= 0) continue;
  const stack: ProfileNode[] = [];
  for (let id: number | undefined = profile.samples[i]; id !== undefined; id = parent.get(id)) stack.push(byId.get(id)!);
  if (match !== undefined && !stack.some((n) => label(n).includes(match))) continue;
  if (stack[0].callFrame.functionName === '(idle)') {
    idleUs += cost;
    continue;
  }
  keptUs += cost;
  selfUs.set(label(stack[0]), (selfUs.get(label(stack[0])) ?? 0) + cost);
  for (const name of new Set(stack.map(label))) totalUs.set(name, (totalUs.get(name) ?? 0) + cost);
}

const print = (title: string, values: Map<string, number>) => {
  console.log(title);
  for (const [name, us] of [...values].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    console.log(`${(us / 1000).toFixed(0).padStart(8)} ms ${((100 * us) / keptUs).toFixed(1).padStart(6)}%  ${name}`);
  }
};
console.log(`${file}: ${(keptUs / 1000).toFixed(0)} ms of non-idle samples kept${match ? ` (stacks matching "${match}")` : ''}, ${(idleUs / 1000).toFixed(0)} ms idle`);
print('\nself time', selfUs);
print('\ninclusive time', totalUs);
