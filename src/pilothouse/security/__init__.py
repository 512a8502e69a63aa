"""The security stage: workload identities, the CA, authentication and authorisation."""
