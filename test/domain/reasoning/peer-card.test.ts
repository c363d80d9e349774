import { describe, expect, it } from 'vitest';
import { applyCardUpdate, CARD_MAX_ENTRIES, cardEntryProblem } from '../../../src/domain/reasoning/peer-card.js';
import { dreamIsDue } from '../../../src/domain/scheduling/dream-schedule.js';
import { DEFAULT_REASONING_SETTINGS } from '../../../src/domain/reasoning-settings.js';

describe('peer card rules', () => {
  it('accepts the four prefixes and refuses others, empty entries and long ones', () => {
    for (const ok of ['IDENTITY: Alice', 'ATTRIBUTE: likes tea', 'RELATIONSHIP: sister of Bob', 'INSTRUCTION: answer briefly']) {
      expect(cardEntryProblem(ok)).toBeUndefined();
    }
    expect(cardEntryProblem('NAME: Alice')).toMatch(/does not start/);
    expect(cardEntryProblem('identity: Alice')).toMatch(/does not start/);
    expect(cardEntryProblem('IDENTITY:   ')).toMatch(/empty/);
    expect(cardEntryProblem(42)).toBe('not a string');
    expect(cardEntryProblem(`ATTRIBUTE: ${'x'.repeat(189)}`)).toBeUndefined(); // 200 characters
    expect(cardEntryProblem(`ATTRIBUTE: ${'x'.repeat(190)}`)).toMatch(/longer than 200/);
  });

  it('drops repeats ignoring case and spacing, keeps order, and caps the card at 40 entries', () => {
    const update = applyCardUpdate(['IDENTITY: Alice', 'ATTRIBUTE: Likes  tea', 'attribute: likes tea', 'ATTRIBUTE: likes tea ', 'ATTRIBUTE:  LIKES TEA']);
    expect(update.card).toEqual(['IDENTITY: Alice', 'ATTRIBUTE: Likes  tea']);
    expect(update.rejected.map((r) => r.reason)).toEqual([
      expect.stringMatching(/does not start/),
      'a repeat of an earlier entry',
      'a repeat of an earlier entry',
    ]);
    const many = Array.from({ length: 45 }, (_, i) => `ATTRIBUTE: fact ${i}`);
    const capped = applyCardUpdate(many);
    expect(capped.card).toHaveLength(CARD_MAX_ENTRIES);
    expect(capped.card?.at(-1)).toBe('ATTRIBUTE: fact 39');
    expect(capped.rejected).toHaveLength(5);
  });

  it('an update with no valid entry gives no card (the old one is kept)', () => {
    expect(applyCardUpdate([]).card).toBeUndefined();
    expect(applyCardUpdate(['Alice likes tea', '', 'IDENTITY:']).card).toBeUndefined();
  });
});

describe('dreamIsDue', () => {
  const settings = { ...DEFAULT_REASONING_SETTINGS.dream, documentThreshold: 3, minHoursBetweenDreams: 8 };
  const now = new Date('2026-01-02T12:00:00Z');
  it('needs the threshold of new explicit conclusions since the last dream', () => {
    expect(dreamIsDue(settings, undefined, 2, now)).toBe(false);
    expect(dreamIsDue(settings, undefined, 3, now)).toBe(true);
    expect(dreamIsDue(settings, { lastDreamAt: new Date('2026-01-01T00:00:00Z'), explicitAtLastDream: 10 }, 12, now)).toBe(false);
    expect(dreamIsDue(settings, { lastDreamAt: new Date('2026-01-01T00:00:00Z'), explicitAtLastDream: 10 }, 13, now)).toBe(true);
  });
  it('and the least time between dreams', () => {
    expect(dreamIsDue(settings, { lastDreamAt: new Date('2026-01-02T04:00:01Z'), explicitAtLastDream: 0 }, 100, now)).toBe(false);
    expect(dreamIsDue(settings, { lastDreamAt: new Date('2026-01-02T04:00:00Z'), explicitAtLastDream: 0 }, 100, now)).toBe(true);
  });
});
