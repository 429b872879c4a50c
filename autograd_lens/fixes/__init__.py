"""The catalogue of the ways to reach the error (:mod:`.patterns`) and the rules that write each
situation's fix as an edit of the program's lines."""
