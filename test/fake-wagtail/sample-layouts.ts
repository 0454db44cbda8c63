/**
 * The pieces of a Wagtail laid out as production sites are, shared by the tests of those layouts:
 * a second Site's tree (ids apart from the default Site's) and a few images and documents.
 * @module
 */
import { generateSite } from './site-generator.js'
import type { FakeMedia, FakePage } from './types.js'

/** The second Site's hostname, as its `Site` record has it. */
export const PARTNER_HOST = 'partner.localhost'
/** Added to the generated ids, so that no page is on both Sites. */
export const PARTNER_OFFSET = 10_000

/** A second Site's tree: 15 generated pages with ids apart from the default Site's. */
export function partnerPages(): FakePage[] {
  const shift = (id: number | null | undefined) => (id === null || id === undefined ? id : id + PARTNER_OFFSET)
  return generateSite({ pages: 15, seed: 7 }).map((page) => ({
    ...page,
    id: page.id + PARTNER_OFFSET,
    parentId: shift(page.parentId) as number | null,
    ...(page.aliasOf == null ? {} : { aliasOf: shift(page.aliasOf) as number }),
  }))
}

export const SAMPLE_MEDIA: FakeMedia = {
  images: [
    { id: 1, title: 'Harbour at dawn', file: 'original_images/harbour.png', tags: ['sea'], width: 640, height: 480 },
    { id: 2, title: 'Alps', file: 'original_images/alps.jpg', width: 1024, height: 768 },
    { id: 5, title: 'Lighthouse', file: 'original_images/lighthouse.png', tags: ['sea', 'night'], width: 300, height: 900 },
  ],
  documents: [
    { id: 1, title: 'Annual report', file: 'documents/report.pdf', tags: ['finance'] },
    { id: 3, title: 'Price list', file: 'documents/prices.pdf' },
  ],
}
