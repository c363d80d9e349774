/**
 * Conversations with questions whose answering turns are known, generated from templates
 * (deterministic: the same seed gives the same text), for measuring how well search answers
 * questions asked in plain language. Two people chat; a few turns state a fact about one of
 * them ("I went to a support group for parents yesterday"), the rest is small talk that reuses
 * the facts' words in other senses, as a real chat does. Each fact has a question worded as a
 * user would ask it ("When did Caroline go to the support group?"): other word forms, the
 * speaker's name (which the answering turn does not hold) and question words.
 */
import { seededRandom } from './corpus.js';

export interface QaTurn {
  speaker: string;
  content: string;
}

export interface QaQuestion {
  question: string;
  /** Index in `turns` of the turn that answers it. */
  answer: number;
}

export interface QaConversation {
  turns: QaTurn[];
  questions: QaQuestion[];
}

/** A fact: what the speaker says, and the question it answers ({name} is the speaker). */
const FACTS: [statement: string, question: string][] = [
  ['I went to a {group} support group {when}, it really helped me', 'When did {name} go to the {group} support group?'],
  ['Finally adopted a {pet} from the shelter {when}!', 'When did {name} adopt the {pet}?'],
  ['I painted a {subject} {when}, it is hanging in my hallway now', 'When did {name} paint the {subject}?'],
  ['My {relative} visited us from {city} {when}', 'When did {name}\'s {relative} visit from {city}?'],
  ['Signed up for a {sport} class at the community centre {when}', 'When did {name} sign up for {sport} classes?'],
  ['We camped by the {landmark} {when}, the stars were amazing', 'When did {name} go camping by the {landmark}?'],
  ['I started reading {book} {when} and cannot put it down', 'What book is {name} reading?'],
  ['Got promoted to {role} at the {company} office {when}', 'When was {name} promoted at {company}?'],
  ['Ran my first {race} {when}, my legs are still sore', 'When did {name} run a {race}?'],
  ['I am learning to play the {instrument}, lessons started {when}', 'Which instrument is {name} learning to play?'],
  ['Baked {dish} for my {relative}\'s birthday {when}', 'What did {name} bake for the birthday?'],
  ['Volunteered at the {place} {when}, sorting donations all day', 'Where did {name} volunteer?'],
  ['Moved into a new apartment near {landmark} {when}', 'When did {name} move into the new apartment?'],
  ['I lost my {item} on the train {when}, so annoying', 'What did {name} lose on the train?'],
  ['Booked flights to {city} for our anniversary {when}', 'Where is {name} flying for the anniversary?'],
  ['My {pet} got sick {when} and we rushed to the vet', 'When did {name}\'s {pet} get sick?'],
];

const SLOTS: Record<string, string[]> = {
  group: ['LGBTQ', 'grief', 'parents', 'veterans', 'newcomers', 'caregivers', 'anxiety', 'sobriety'],
  pet: ['kitten', 'beagle', 'parrot', 'rabbit', 'greyhound', 'tortoise', 'hamster', 'terrier'],
  subject: ['sunrise', 'lighthouse', 'portrait of my grandmother', 'lake at dusk', 'field of sunflowers', 'harbour'],
  relative: ['sister', 'uncle', 'grandmother', 'cousin', 'brother', 'aunt', 'nephew', 'niece'],
  city: ['Lisbon', 'Toronto', 'Nairobi', 'Osaka', 'Krakow', 'Denver', 'Melbourne', 'Seville'],
  sport: ['pottery', 'climbing', 'salsa', 'fencing', 'kayaking', 'archery', 'judo', 'yoga'],
  landmark: ['lake', 'river', 'canyon', 'waterfall', 'glacier', 'dunes', 'cliffs', 'redwoods'],
  book: ['Middlemarch', 'Dune', 'Beloved', 'Rebecca', 'Emma', 'Ulysses', 'Frankenstein', 'Dracula'],
  role: ['team lead', 'senior designer', 'head chef', 'project manager', 'charge nurse', 'principal'],
  company: ['Acme', 'Globex', 'Initech', 'Umbrella', 'Hooli', 'Vandelay', 'Soylent', 'Wonka'],
  race: ['marathon', 'half marathon', 'triathlon', '10k', 'trail race', 'ultramarathon'],
  instrument: ['cello', 'banjo', 'saxophone', 'ukulele', 'harp', 'accordion', 'trumpet', 'violin'],
  dish: ['a lemon tart', 'banana bread', 'a chocolate cake', 'cinnamon rolls', 'apple pie', 'macarons'],
  place: ['food bank', 'animal shelter', 'soup kitchen', 'library', 'hospice', 'refugee centre'],
  item: ['wallet', 'umbrella', 'headphones', 'scarf', 'laptop', 'passport', 'keys', 'sketchbook'],
  when: ['yesterday', 'last week', 'on Sunday', 'last month', 'this morning', 'on Friday', 'last weekend'],
};

/**
 * Small talk. Its words overlap the facts' (support, group, class, train, birthday, book, new,
 * sick, ran, painted ...), so a question's common words find many turns and ranking decides.
 */
const CHATTER = [
  'Haha that is so true, I was thinking the same thing',
  'How was your day? Mine was pretty busy with work stuff',
  'Thanks for the support, it means a lot to me',
  'Our group chat has been so quiet lately',
  'I went to the store and forgot what I needed',
  'The train was late again this morning, classic',
  'Did you see the game last night? What a finish',
  'I need a new book to read, any recommendations?',
  'Work has been stressful but I am getting through it',
  'We should get coffee sometime next week',
  'That sounds amazing, tell me more about it',
  'I am so tired today, barely slept',
  'My neighbour is painting the fence again, the smell is everywhere',
  'The weather has been lovely, finally some sun',
  'I feel like I have not seen you in forever',
  'The new cafe downtown has really good pastries',
  'Class was cancelled so I just stayed home',
  'I was sick of cooking so we ordered pizza',
  'Birthday parties for kids are exhausting',
  'Ran some errands and then took a long nap',
  'I should really start exercising more',
  'Honestly I just want a quiet weekend',
  'The kids were up early, so I am running on coffee',
  'Did you finish that show we talked about?',
  'I keep meaning to call my family more often',
  'Support from friends makes all the difference',
  'My phone battery dies so fast lately',
  'The office is freezing, I brought a blanket',
  'We went for a walk around the block after dinner',
  'That is hilarious, I cannot stop laughing',
];

const NAMES = ['Caroline', 'Melanie', 'Jon', 'Gina', 'Tim', 'Maria', 'Dev', 'Aisha', 'Sam', 'Priya'];

function fill(template: string, values: Record<string, string>): string {
  return template.replace(/\{(\w+)\}/g, (_, key: string) => values[key]);
}

/**
 * A conversation of `turns` turns between two people with `facts` facts spread through it
 * (never two with the same slot values, so each question has one answer).
 */
export function qaConversation(seed: number, turns: number, facts: number): QaConversation {
  const random = seededRandom(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)];
  const speakers = [NAMES[seed % NAMES.length], NAMES[(seed + 3) % NAMES.length]];
  const result: QaConversation = { turns: [], questions: [] };
  const factAt = new Set<number>();
  while (factAt.size < Math.min(facts, turns)) factAt.add(Math.floor(random() * turns));
  const used = new Set<string>();
  for (let index = 0; index < turns; index++) {
    const speaker = speakers[index % 2];
    if (!factAt.has(index)) {
      result.turns.push({ speaker, content: pick(CHATTER) });
      continue;
    }
    let statement: string;
    let question: string;
    for (;;) {
      const [template, asked] = pick(FACTS);
      const values: Record<string, string> = { name: speaker };
      for (const key of Object.keys(SLOTS)) values[key] = pick(SLOTS[key]);
      statement = fill(template, values);
      question = fill(asked, values);
      // each question has one answer: the same question is not asked of two facts
      if (!used.has(question)) break;
    }
    used.add(question);
    result.turns.push({ speaker, content: statement });
    result.questions.push({ question, answer: index });
  }
  return result;
}

/** The evaluation set: a long conversation (LoCoMo-sized chats run to thousands of turns) and shorter ones. */
export function qaConversations(): QaConversation[] {
  return [qaConversation(1, 6000, 120), qaConversation(2, 600, 30), qaConversation(3, 300, 20), qaConversation(4, 300, 20)];
}

/** The small set the test asserts on. */
export function smallQaConversations(): QaConversation[] {
  return [qaConversation(5, 400, 25), qaConversation(6, 200, 15)];
}
