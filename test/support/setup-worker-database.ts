import { ensureWorkerDatabase } from './worker-database.js';

// run before each test file (vitest.config.ts, setupFiles): the worker's PostgreSQL database exists
if (process.env.DATABASE_URL?.startsWith('postgres')) await ensureWorkerDatabase(process.env.DATABASE_URL);
