export { type ImageServer, type ServedImage, startImageServer } from './image-server.js';
