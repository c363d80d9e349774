import { startFakeModelServer, type FakeModelServer } from '../support/fake-model-server.js';
import { facts, REASONING_TEST_ENV } from '../support/reasoning-harness.js';

/**
 * A fake model server answering every call of the reasoning layer (the deriver's facts, a
 * summary, the dialectic's final answer), and the settings that make a server use it and run
 * its work at once: for fuzz runs that race reasoning work against deletes.
 */
export async function startFuzzModel(): Promise<{ fake: FakeModelServer; env: Record<string, string> }> {
  const fake = await startFakeModelServer();
  fake.script.defaultChat((request) => {
    if (request.body.tools) return { text: 'Alice lives in Lisbon, as far as I know.' };
    if (request.body.response_format) return facts('alice lives in Lisbon', 'alice swims on weekends');
    return { text: 'A short summary of the conversation.' };
  });
  const env = {
    ...fake.env(),
    ...REASONING_TEST_ENV,
    METRICS_ENABLED: 'true',
    SUMMARY_MESSAGES_PER_SHORT_SUMMARY: '10',
    SUMMARY_MESSAGES_PER_LONG_SUMMARY: '20',
    DREAM_DOCUMENT_THRESHOLD: '5',
  };
  return { fake, env };
}

/** What a fuzz run's server must not show afterwards: dead-lettered jobs and errors in its log. */
export async function serverProblems(baseUrl: string, output: string): Promise<string[]> {
  const problems: string[] = [];
  const metrics = (await (await fetch(`${baseUrl}/metrics`)).text()).split('\n');
  const dead = metrics.find((line) => line.startsWith('engram_queue_jobs{status="dead"}'));
  if (dead !== 'engram_queue_jobs{status="dead"} 0') problems.push(`dead-lettered jobs: ${dead ?? 'no engram_queue_jobs metric'}`);
  for (const line of output.split('\n')) if (line.includes('"level":50') || line.includes('"level":60')) problems.push(line.slice(0, 2000));
  return problems;
}
