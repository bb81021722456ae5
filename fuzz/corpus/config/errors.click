a :: Nope; a -> b; c :: Queue(-1) -> [9]d :: Discard; e :: Counter(
