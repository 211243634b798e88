"""Linear logistic fusion of a run's models (interbias fuse) and the fused model against each component."""
