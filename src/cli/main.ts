#!/usr/bin/env node
// `engram <command>`: the command line is read first, so `--help`, `help <command>` and mistakes
// answer at once, before any setting is read or the server's modules load.
import { parseCommandLine } from './command-line.js';

const line = parseCommandLine(process.argv.slice(2));
if (line.kind === 'help') {
  console.log(line.text);
  process.exit(0);
}
if (line.kind === 'error') {
  console.error(`engram: ${line.message}`);
  process.exit(2);
}
const { runCommand } = await import('./run-command.js');
runCommand(line).then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (error: unknown) => {
    console.error('engram:', error instanceof Error ? error.message : error);
    process.exit(1);
  },
);
