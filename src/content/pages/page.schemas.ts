import { Type } from 'typebox';
import {
  envelopeSchema,
  filterText,
  INT32_MAX,
  listedRecordSchema,
  listQueryProperties,
  listViewProperties,
  recordSchema,
  writeSchema,
  writtenSchema,
} from '../shared/schemas.js';
import { PAGE_BODY_FIELDS, PAGE_FIELDS } from './page.fields.js';
import { PAGES } from './page.repository.js';

const PageRecord = recordSchema('Page', PAGE_FIELDS, {
  id: Type.Integer({ description: 'The same as page' }),
});

export const PageWrite = writeSchema('PageInput', PAGE_FIELDS, {
  page_parent: Type.Integer({ minimum: 0, maximum: INT32_MAX, description: PAGE_FIELDS.page_parent.description }),
  page_alias: Type.String({ maxLength: 200, pattern: '^[^/?#\\s]*$', description: PAGE_FIELDS.page_alias.description }),
  page_alttemplate: Type.String({ pattern: '^[A-Fa-f]?$', description: PAGE_FIELDS.page_alttemplate.description }),
  page_thumb_dimensions: Type.String({ pattern: '^(\\d{1,5}x\\d{1,5})?$', description: PAGE_FIELDS.page_thumb_dimensions.description }),
  page_notify: Type.Union([Type.Literal(''), Type.String({ format: 'email' })], { description: PAGE_FIELDS.page_notify.description }),
});

export const PageList = envelopeSchema('PageEnvelope', PageRecord);
/** The list's envelope: every field, unless fields or allFields=false chose fewer. */
export const PageListing = envelopeSchema('PageList', listedRecordSchema('PageListItem', PageRecord, PAGES.fields.ids));
export const PageWritten = writtenSchema('PageData', PageRecord);

export const PageQuery = Type.Object(
  {
    ...listQueryProperties,
    // 32-bit like the column: a larger id would make PostgreSQL fail the query (a 500), not a 400.
    page: Type.Optional(Type.Integer({ minimum: 1, maximum: INT32_MAX, description: 'Filter by page (the page ID)' })),
    title: Type.Optional(filterText('Filter by title (page_usertitle or page_menuname); a pattern')),
    filename: Type.Optional(filterText('Filter by filename (page_alias); a pattern')),
    parent: Type.Optional(
      Type.Integer({ minimum: 0, maximum: INT32_MAX, description: 'Pages whose parent is this page ID (0: top level)' }),
    ),
    page_parent: Type.Optional(Type.Integer({ minimum: 0, maximum: INT32_MAX, description: 'The same as parent' })),
    tags: Type.Optional(filterText('Any of the comma-separated page_keywords matches; a pattern')),
    tag: Type.Optional(filterText('The same as tags')),
    menutext: Type.Optional(filterText('Filter by menu text (page_menuname); a pattern')),
    ...listViewProperties(Object.keys(PAGES.orders), PAGE_BODY_FIELDS),
  },
  { additionalProperties: false },
);
