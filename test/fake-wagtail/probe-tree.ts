/**
 * The tree the real Wagtail 7.4.3 was probed with (`fixtures/wagtail-probes-7.4.3.txt`):
 * 3 Home › {4 "Blog One ü ☃" › 6 Child; 5 Alpha; 7 Draft (not live); 8 alias of 5}. Values (timestamps,
 * SEO fields, BlogPage's `date`/`intro`/`body`) are copied from the transcripts so answers match byte for byte.
 * @module
 */
import type { FakePage } from './types.js'

const EMPTY_BLOG = { date: null, intro: '', body: '' }

export function probeTree(): FakePage[] {
  const page = (fields: Partial<FakePage> & Pick<FakePage, 'id' | 'title' | 'slug' | 'parentId'>): FakePage => ({
    type: 'home.BlogPage',
    showInMenus: false,
    seoTitle: '',
    searchDescription: '',
    firstPublishedAt: null,
    extra: { ...EMPTY_BLOG },
    ...fields,
  })
  return [
    page({ id: 3, type: 'home.HomePage', title: 'Home', slug: 'homepage', parentId: null, firstPublishedAt: '2026-11-21T18:57:17.391666Z', extra: {} }),
    page({
      id: 4,
      title: 'Blog One ü ☃',
      slug: 'blog-one',
      parentId: 3,
      showInMenus: true,
      seoTitle: 'SEO',
      searchDescription: 'desc',
      firstPublishedAt: '2026-11-21T18:57:17.509378Z',
      extra: { date: '2024-01-02', intro: 'Intro \u2028 line', body: '<p>Hello <a linktype="page" id="3">home</a></p>' },
    }),
    page({ id: 6, title: 'Child', slug: 'child', parentId: 4, firstPublishedAt: '2026-11-21T18:57:17.641688Z' }),
    page({ id: 5, title: 'Alpha', slug: 'alpha', parentId: 3, firstPublishedAt: '2024-05-06T07:08:09Z' }),
    page({ id: 7, title: 'Draft', slug: 'draft', parentId: 3, live: false, firstPublishedAt: null }),
    page({ id: 8, title: 'Alpha', slug: 'alpha-alias', parentId: 3, aliasOf: 5 }),
  ]
}
