import { Type } from 'typebox';
import {
  BodyBoolean,
  envelopeSchema,
  filterText,
  INT32_MAX,
  listedRecordSchema,
  listQueryProperties,
  listViewProperties,
  QueryBoolean,
  recordSchema,
  writeBodies,
  writeSchema,
  writtenSchema,
} from '../shared/schemas.js';
import { BLOG_BODY_FIELDS, BLOG_FIELDS } from './blog.fields.js';
import { BLOGS } from './blog.repository.js';

const d = (field: keyof typeof BLOG_FIELDS) => BLOG_FIELDS[field].description;
const nonNegative = (field: keyof typeof BLOG_FIELDS) => Type.Integer({ minimum: 0, maximum: INT32_MAX, description: d(field) });
/** YYYY-MM-DD that names a real day (ajv-formats checks month lengths and leap years), or empty. */
const dateOrEmpty = (field: keyof typeof BLOG_FIELDS) =>
  Type.Union([Type.Literal(''), Type.String({ format: 'date', pattern: '^\\d{4}-\\d{2}-\\d{2}$' })], { description: d(field) });

const ImageMetadata = Type.Object(
  {
    width: Type.Integer({ description: 'Width in pixels' }),
    height: Type.Integer({ description: 'Height in pixels' }),
    bytes: Type.Integer({ description: 'File size in bytes' }),
    type: Type.String({ description: 'MIME type, e.g. image/jpeg' }),
    thumbnail: Type.Optional(
      Type.Object(
        {
          src: Type.String({ description: 'Path of the thumbnail: the image path with -thumb before the extension' }),
          width: Type.Integer({ description: 'Width in pixels' }),
          height: Type.Integer({ description: 'Height in pixels' }),
        },
        {
          additionalProperties: false,
          description: "The thumbnail the page's page_thumb_dimensions asked for; absent when it asks for none",
        },
      ),
    ),
  },
  { $id: 'ImageMetadata', additionalProperties: false, description: 'The stored image, after the page’s image rules' },
);

const BlogRecord = recordSchema('Blog', BLOG_FIELDS, {
  info_show: Type.Union([Type.Literal('Y'), Type.Literal('N')], { description: d('info_show') }),
  info_img_json: Type.Union([ImageMetadata, Type.Null()], { description: d('info_img_json') }),
  info_more_images: Type.Array(Type.String(), { description: d('info_more_images') }),
  id: Type.Integer({ description: 'The same as info_id' }),
});

const MIGRATE_MODE_DESCRIPTION =
  'Repeatable migration: a primary image or additional images already on the blog are kept, not replaced; additional images only add originals not seen before (same file name and content); the primary image is never listed in info_more_images. true or 1.';

export const BlogWrite = writeSchema(
  'BlogInput',
  BLOG_FIELDS,
  {
    page: Type.Integer({ minimum: 1, maximum: INT32_MAX, description: d('page') }),
    info_filename: Type.String({ maxLength: 200, pattern: '^[^/?#\\s]*$', description: d('info_filename') }),
    info_show: Type.Union([Type.Boolean(), Type.Integer({ minimum: 0, maximum: 1 }), Type.Literal('Y'), Type.Literal('N')], {
      description: d('info_show'),
    }),
    info_hideuntil: dateOrEmpty('info_hideuntil'),
    info_date: dateOrEmpty('info_date'),
    info_order: nonNegative('info_order'),
    info_more_images: Type.Array(Type.String({ maxLength: 2000 }), { maxItems: 1000, description: d('info_more_images') }),
    info_img: Type.String({ maxLength: 2000, description: d('info_img') }),
    // System field: sent back as read (object or null), ignored.
    info_img_json: Type.Union([Type.Object({}), Type.Null()], { description: d('info_img_json') }),
    info_authorid: nonNegative('info_authorid'),
    info_duplicationid: nonNegative('info_duplicationid'),
    info_category1: nonNegative('info_category1'),
    info_category2: nonNegative('info_category2'),
    info_category3: nonNegative('info_category3'),
    info_groupid: nonNegative('info_groupid'),
    info_email: Type.Union([Type.Literal(''), Type.String({ format: 'email' })], { description: d('info_email') }),
  },
  { migrateMode: { ...BodyBoolean, description: MIGRATE_MODE_DESCRIPTION } },
);

/** POST query string: migrateMode may come here instead of in the body. */
export const BlogWriteQuery = Type.Object(
  { migrateMode: Type.Optional({ ...QueryBoolean, description: MIGRATE_MODE_DESCRIPTION }) },
  { additionalProperties: false },
);

const imageFile = (description: string) => Type.String({ format: 'binary', description });
const imageFiles = (description: string) => Type.Array(Type.String({ format: 'binary' }), { description });

/** The multipart form's files (spec §4.5), for the references and OpenAPI; the route streams and checks them. */
const BLOG_FILES = {
  uploadPrimaryImage: Type.Optional(imageFile('One primary image (JPEG, PNG, GIF, WebP or AVIF); sets info_img and info_img_json')),
  uploadAdditionalImage: Type.Optional(imageFiles('Additional image; may be repeated; added to info_more_images')),
  uploadAdditionalImages: Type.Optional(imageFiles('Additional image; may be repeated; added to info_more_images')),
  primaryImage: Type.Optional(imageFile('Older name of uploadPrimaryImage')),
  additionalImage: Type.Optional(imageFiles('Older name of uploadAdditionalImage')),
  additionalImages: Type.Optional(imageFiles('Older name of uploadAdditionalImages')),
};

/** The bodies POST /api/blog takes: JSON, or a form with `data`, the credentials and the files. */
export const BlogBodies = writeBodies(BlogWrite, 'blog', BLOG_FILES);

export const BlogList = envelopeSchema('BlogEnvelope', BlogRecord);
/** The list's envelope: every field, unless fields or allFields=false chose fewer. */
export const BlogListing = envelopeSchema('BlogList', listedRecordSchema('BlogListItem', BlogRecord, BLOGS.fields.ids));
export const BlogWritten = writtenSchema('BlogData', BlogRecord);

export const BlogQuery = Type.Object(
  {
    ...listQueryProperties,
    page: Type.Optional(Type.Integer({ minimum: 1, maximum: INT32_MAX, description: 'Blogs on this page (the page ID)' })),
    title: Type.Optional(filterText('Filter by title (info_title); a pattern')),
    tags: Type.Optional(filterText('Any of the comma-separated info_tags matches; a pattern')),
    tag: Type.Optional(filterText('The same as tags')),
    filename: Type.Optional(filterText('Filter by filename (info_filename); a pattern')),
    ...listViewProperties(Object.keys(BLOGS.orders), BLOG_BODY_FIELDS),
  },
  { additionalProperties: false },
);
