export { createHttpRootFixture, type HttpRootFixture } from './http-root-fixture.js';
export { type ImageServer, type ServedImage, startImageServer } from './image-server.js';
