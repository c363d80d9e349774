/**
 * Generated facts about people, as the deriver states them (third person, one fact a line), and
 * questions a user asks about them, for the conclusion search evaluation (search-eval.ts). Each
 * question has one fact that answers it. Three kinds of question:
 *
 * - paraphrased: other word forms than the fact's ("Why does she enjoy landscape painting?" for
 *   "Mara enjoys painting landscapes because it calms her down") and question words;
 * - numeric: a year, a count or a day number that one fact holds, among facts of the same kind
 *   that hold other numbers;
 * - named entity: a person or a place that one fact of its kind names, among facts of the same
 *   kind about others.
 *
 * The facts share their vocabulary on purpose (many gifts, trips, hobbies), and ordinary
 * function words are everywhere, as in stored conclusions. Deterministic (a seeded generator):
 * built for this evaluation, not taken from or tuned to any public benchmark.
 */

/** One collection: an observer's facts about one person, and questions with the fact that answers each. */
export interface FactSet {
  subject: string;
  facts: string[];
  questions: { question: string; answer: number; kind: 'paraphrased' | 'numeric' | 'named entity' }[];
}

function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SUBJECTS = ['Mara', 'Joaquim', 'Lena', 'Tobias'];
const PEOPLE = ['Rodrigo', 'Priya', 'Wendell', 'Aiko', 'Bartek', 'Solveig', 'Kwame', 'Delphine', 'Yusuf', 'Margit', 'Oona', 'Teodor', 'Imani', 'Casimir', 'Ruth', 'Anselm'];
const RELATIONS = ['sister', 'brother', 'cousin', 'neighbour', 'colleague', 'friend from school', 'aunt', 'uncle'];
const CITIES = ['Lisbon', 'Tampere', 'Valparaiso', 'Ghent', 'Kumasi', 'Sapporo', 'Tucson', 'Ljubljana', 'Hobart', 'Nantes', 'Izmir', 'Cusco'];
const EVENTS = ['a pottery workshop', 'a jazz festival', 'a marathon', 'a cooking class', 'a climbing trip', 'a book fair', 'a film festival', 'a charity run', 'a chess tournament', 'a wedding'];
const MONTHS = ['January', 'March', 'May', 'July', 'September', 'November'];
const ITEMS = ['a vintage camera', 'a wool scarf', 'a set of paints', 'a bicycle helmet', 'a cookbook', 'a fountain pen', 'a houseplant', 'a pair of hiking boots', 'a record player', 'a telescope'];
const OCCASIONS = ['her birthday', 'the holidays', 'the new job', 'the move', 'graduation'];
const HOBBIES: { fact: string; question: string }[] = [
  { fact: 'enjoys painting landscapes because it calms her down', question: 'Why does she enjoy landscape painting?' },
  { fact: 'started learning the cello after hearing a concert', question: 'What made her start to learn cello?' },
  { fact: 'volunteers at the animal shelter on weekends', question: 'Where does she volunteer at weekends?' },
  { fact: 'is training for long distance swimming in the sea', question: 'What is she in training for?' },
  { fact: 'collects old maps of the places her family lived', question: 'What kind of maps does she collect?' },
  { fact: 'bakes sourdough bread every Sunday morning', question: 'When does she bake bread?' },
  { fact: 'grows tomatoes and peppers on her balcony', question: 'What does she grow on the balcony?' },
  { fact: 'reads mystery novels before going to sleep', question: 'What novels does she read before sleeping?' },
  { fact: 'prefers walking to work over taking the bus', question: 'Does she prefer to walk to work or take a bus?' },
  { fact: 'worries that her job leaves no time for friends', question: 'What is she worried about with her job?' },
  { fact: 'keeps a journal of the birds she has spotted', question: 'What does she keep journals of?' },
  { fact: 'dislikes crowded beaches and avoids them in summer', question: 'Which beaches does she dislike?' },
];
const FILLER = [
  'said that she was not sure what she would do about it',
  'was happy to talk about her week with the others',
  'mentioned that it had been a long and tiring day for her',
  'thinks that it is important to be there for the people around her',
  'told them that she had been busy with a lot of things lately',
  'was feeling better than she had been the week before',
];

/** Most questions of one kind about one collection. */
const QUESTIONS_PER_KIND = 15;

/** Four collections of `factsEach` facts (at least 120), with up to 15 questions of each kind. */
export function factSets(factsEach = 240): FactSet[] {
  return SUBJECTS.map((subject, index) => factSet(subject, 1000 + index, factsEach));
}

function factSet(subject: string, seed: number, factsEach: number): FactSet {
  const next = random(seed);
  const pick = <T>(list: readonly T[]) => list[Math.floor(next() * list.length)];
  const facts: string[] = [];
  const questions: FactSet['questions'] = [];
  const seen = new Set<string>();
  const add = (fact: string): number | undefined => {
    if (seen.has(fact)) return undefined;
    seen.add(fact);
    facts.push(fact);
    return facts.length - 1;
  };
  const years = new Set<number>();
  const givers = new Set<string>();
  const relatives = new Set<string>();
  const counts = new Set<number>();
  while (facts.length < factsEach) {
    const kind = Math.floor(next() * 7);
    if (kind === 0) {
      // an event in a year: numeric question when the year is the only one of its kind so far
      const year = 1995 + Math.floor(next() * 30);
      const event = pick(EVENTS);
      const at = add(`${subject} went to ${event} in ${pick(CITIES)} in ${pick(MONTHS)} ${year} with some friends`);
      if (at !== undefined && !years.has(year)) {
        years.add(year);
        questions.push({ question: `What did ${subject} go to in ${year}?`, answer: at, kind: 'numeric' });
      }
    } else if (kind === 1) {
      const giver = pick(PEOPLE);
      const at = add(`${giver} gave ${subject} ${pick(ITEMS)} for ${pick(OCCASIONS)}`);
      if (at !== undefined && !givers.has(giver)) {
        givers.add(giver);
        questions.push({ question: `What present did she get from ${giver}?`, answer: at, kind: 'named entity' });
      }
    } else if (kind === 2) {
      const person = pick(PEOPLE);
      const relation = pick(RELATIONS);
      const at = add(`${subject}'s ${relation} ${person} lives in ${pick(CITIES)} and visits her sometimes`);
      if (at !== undefined && !relatives.has(person)) {
        relatives.add(person);
        questions.push({ question: `Where does ${person} live?`, answer: at, kind: 'named entity' });
      }
    } else if (kind === 3) {
      const n = 3 + Math.floor(next() * 97);
      const at = add(`${subject} ran ${n} kilometres in training over the last month`);
      if (at !== undefined && !counts.has(n)) {
        counts.add(n);
        questions.push({ question: `In which month did she run ${n} kilometres?`, answer: at, kind: 'numeric' });
      }
    } else if (kind === 4) {
      const hobby = pick(HOBBIES);
      const at = add(`${subject} ${hobby.fact}`);
      if (at !== undefined) questions.push({ question: hobby.question, answer: at, kind: 'paraphrased' });
    } else {
      add(`${subject} ${pick(FILLER)} on ${pick(MONTHS)} ${1 + Math.floor(next() * 28)}`);
    }
  }
  // as many questions of each kind (at most QUESTIONS_PER_KIND), spread over the facts
  const kept = (['numeric', 'named entity', 'paraphrased'] as const).flatMap((kind) => {
    const of = questions.filter((q) => q.kind === kind);
    const step = Math.max(1, of.length / QUESTIONS_PER_KIND);
    return Array.from({ length: Math.min(QUESTIONS_PER_KIND, of.length) }, (_, i) => of[Math.floor(i * step)]);
  });
  return { subject, facts, questions: kept };
}
