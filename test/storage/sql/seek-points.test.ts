import { describe, expect, it } from 'vitest';
import { SeekPoints } from '../../../src/storage/sql/seek-points.js';

const point = (rows: number) => ({ rows, key: [rows * 10] });

describe('SeekPoints', () => {
  it('gives the nearest point at or before the offset, for the version it was read at only', () => {
    const points = new SeekPoints();
    for (const rows of [600, 200, 400]) points.remember('list', 'v1', point(rows));
    expect(points.nearest('list', 'v1', 199)).toBeUndefined();
    expect(points.nearest('list', 'v1', 200)).toEqual(point(200));
    expect(points.nearest('list', 'v1', 599)).toEqual(point(400));
    expect(points.nearest('list', 'v1', 10_000)).toEqual(point(600));
    expect(points.nearest('list', 'v2', 600)).toBeUndefined();
    expect(points.nearest('other', 'v1', 600)).toBeUndefined();
    // a point of another version replaces the list's points
    points.remember('list', 'v2', point(300));
    expect(points.nearest('list', 'v1', 600)).toBeUndefined();
    expect(points.nearest('list', 'v2', 600)).toEqual(point(300));
  });

  it('keeps one point per place, and thins a long list of points out keeping the newest', () => {
    const points = new SeekPoints();
    points.remember('list', 'v', point(100));
    points.remember('list', 'v', { rows: 100, key: ['other'] });
    expect(points.nearest('list', 'v', 100)).toEqual(point(100));
    for (let page = 2; page <= 65; page++) points.remember('list', 'v', point(page * 100));
    // 65 points became 33: the even places (counting from one) and the last
    expect(points.nearest('list', 'v', 6_500)).toEqual(point(6_500));
    expect(points.nearest('list', 'v', 6_499)).toEqual(point(6_400));
    expect(points.nearest('list', 'v', 6_399)).toEqual(point(6_200));
    expect(points.nearest('list', 'v', 199)).toBeUndefined();
    expect(points.nearest('list', 'v', 200)).toEqual(point(200));
  });

  it('forgets the lists used longest ago', () => {
    const points = new SeekPoints(2);
    for (const list of ['a', 'b', 'c']) points.remember(list, 'v', point(500));
    expect(points.nearest('a', 'v', 500)).toBeUndefined();
    expect(points.nearest('c', 'v', 500)).toEqual(point(500));
  });
});
