import { expect } from 'vitest';
import { ConfigError, loadConfig, type Config } from '../../src/config/config.js';

/** The settings made of `env` alone (no .env file is read). */
export const loadEnv = (env: Record<string, string>): Config => loadConfig(env, '/nonexistent/.env');

/** The problems loadConfig reports for `env`; fails the test when it loads. */
export function configProblems(env: Record<string, string>): string[] {
  try {
    loadEnv(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).problems;
  }
  throw new Error('expected a configuration error');
}
