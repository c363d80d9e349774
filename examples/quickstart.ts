// The smallest program that stores a conversation in Engram and asks about it, with the official
// TypeScript SDK (`npm install @honcho-ai/sdk`). Engram must be running (`npm start`) with a model
// configured for the question (README, "Reasoning"). Run it: npx tsx examples/quickstart.ts
import { Honcho } from '@honcho-ai/sdk';

const honcho = new Honcho({
  baseURL: process.env.ENGRAM_URL ?? 'http://127.0.0.1:8000',
  workspaceId: 'demo',
  // any text while AUTH_USE_AUTH is off; a key from `npm run token` when it is on
  apiKey: process.env.ENGRAM_KEY ?? 'unused-when-auth-is-off',
});

const alice = await honcho.peer('alice');
const bot = await honcho.peer('bot');
const session = await honcho.session('quickstart');
await session.addMessages([alice.message('I just moved to Lisbon'), bot.message('Welcome! How do you like it so far?')]);

console.log(await bot.chat('Where does Alice live?', { target: alice }));
