import { writeFileSync } from 'node:fs';
import { configurationReference, envExample } from '../src/config/settings-docs.js';

/** Writes `.env.example` and docs/configuration.md from the settings table (`npm run docs:settings`). */
writeFileSync(new URL('../.env.example', import.meta.url), envExample());
writeFileSync(new URL('../docs/configuration.md', import.meta.url), configurationReference());
console.log('wrote .env.example and docs/configuration.md');
