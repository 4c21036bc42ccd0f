// Package feed is the domain of feedd: users, posts, the follow graph, the
// cursors that page a timeline, the error codes every layer speaks, the
// messages the processes pass through the outbox and the queues, and the
// contracts (Cache, Broker) that have several real implementations: the
// embedded in-process default and Redis / RabbitMQ. It imports no
// infrastructure.
package feed
