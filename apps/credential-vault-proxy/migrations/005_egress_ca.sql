-- The certificate authority of an egress remote (issue 28): HTTPS to a host the session holds a
-- credential for is terminated by the proxy with certificates this CA issues, which only the
-- remote's sandbox trusts. The certificate is public (the sandbox gets it); the private key is
-- sealed like a credential's secret (a data key wrapped by a master key, bound to the CA's
-- fingerprint) and ends with the remote. Git remotes and older rows have none.
ALTER TABLE remotes
  ADD COLUMN ca_certificate    text,
  ADD COLUMN ca_key_ciphertext bytea,
  ADD COLUMN ca_wrapped_key    bytea,
  ADD COLUMN ca_master_key_id  text;
