// Package agentdojo replays an AgentDojo suite, re-shaped for a retrieval
// service (testdata/: workspace and slack, MIT, see testdata/NOTICE.md),
// through ingestd without a model (issue 29):
//
//  1. It derives the organisation from the suite's documents by the rules
//     of Derive (the mailbox owner's domain, the Slack workspace's members)
//     and writes the configuration its operator would: one installation
//     per kind of document, each with the tier the rules give it, mail
//     trusted only by verified sender. A kind the rules do not know is
//     untrusted. The answer key (each document's authored_by) is never
//     read to configure anything; it only scores the labels.
//  2. It ingests every document through the connector it would arrive by:
//     mail (.eml) through the files connector's mail path with the
//     Authentication-Results the organisation's boundary MTA would add,
//     web pages through the url connector against an in-process HTTP
//     server, Slack messages and channels through the signed webhook
//     intake, the rest through the files connector; then the pipeline, a
//     SQLite file, the lexical embedder and retrieval.Service.
//  3. It replays each user task as one turn: a search read is a Retrieve
//     with the call's query (scored for recall of the documents the call
//     lists), a read of named items reads those documents whole; each
//     read's verdict governs the calls after it, judged by the class the
//     host declares for each tool (the suite's tool classes). It counts,
//     per policy (strict, graded, graded_confirm), utility, attack success
//     and confirmations, and the same with the answer key's labels
//     (bound). docs/BENCHMARKS.md defines every figure.
//
// It measures; it never changes ranking or the verdict.
package agentdojo
