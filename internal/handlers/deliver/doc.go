// Package deliver is the HTTP delivery consumer: it POSTs each event of a
// topic to the topic's subscriber URL, signed the Standard Webhooks way
// (webhook-id, webhook-timestamp, webhook-signature: v1,<base64
// HMAC-SHA256>), and maps the answer to the consumer runtime's retry
// intent: 2xx done; 408, 425, 429, 5xx and network errors or timeouts
// transient (honouring Retry-After); any other status permanent.
//
// Sign and Verify implement the signature scheme; subscribers can use
// Verify (or any Standard Webhooks library) to check a delivery.
package deliver
